-- Each resource's API representation, rendered once per write (by the
-- triggers below, in the writing transaction) instead of once per read:
-- list pages pass these documents through untouched. The same document as
-- SQLite's json_patch(json_object(...), attrs), built with jsonb: the key
-- order and spacing of the text differ, its content does not.
ALTER TABLE resources ADD COLUMN doc TEXT COLLATE "C";

-- RFC 7396 merge patch, as SQLite's json_patch: a non-object patch replaces
-- the target; otherwise each patch key whose value is null removes that key,
-- and every other key is merged into the target's value recursively.
CREATE FUNCTION gi_json_merge_patch(target JSONB, patch JSONB) RETURNS JSONB
LANGUAGE plpgsql IMMUTABLE AS $fn$
DECLARE
    merged JSONB;
    k TEXT;
    v JSONB;
BEGIN
    IF patch IS NULL OR jsonb_typeof(patch) <> 'object' THEN
        RETURN patch;
    END IF;
    IF target IS NULL OR jsonb_typeof(target) <> 'object' THEN
        merged := '{}';
    ELSE
        merged := target;
    END IF;
    FOR k, v IN SELECT e.key, e.value FROM jsonb_each(patch) e LOOP
        IF jsonb_typeof(v) = 'null' THEN
            merged := merged - k;
        ELSE
            merged := merged || jsonb_build_object(k, gi_json_merge_patch(merged -> k, v));
        END IF;
    END LOOP;
    RETURN merged;
END
$fn$;

-- Unix seconds as YYYY-MM-DDTHH:MM:SSZ in UTC, whatever the session's zone
-- (SQLite's strftime('%Y-%m-%dT%H:%M:%SZ', s, 'unixepoch')).
CREATE FUNCTION gi_utc_text(s BIGINT) RETURNS TEXT LANGUAGE sql STABLE AS $fn$
    SELECT to_char(to_timestamp(s) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
$fn$;

-- The document of one resources row: its columns with the data center's
-- name and metadata embedded as JSON, patched with attrs.
CREATE FUNCTION gi_resource_doc(r resources) RETURNS TEXT LANGUAGE sql STABLE AS $fn$
    SELECT gi_json_merge_patch(jsonb_build_object('id', r.id, 'datacenter_id', r.datacenter_id,
        'datacenter', (SELECT d.name FROM datacenters d WHERE d.id = r.datacenter_id),
        'kind', r.kind, 'name', r.name, 'state', r.state,
        'tenant', r.tenant, 'project', r.project, 'gpu_model', r.gpu_model,
        'gpu_count', r.gpu_count, 'metadata', r.metadata::JSONB, 'version', r.version,
        'created_at', gi_utc_text(r.created_at),
        'updated_at', gi_utc_text(r.updated_at)), r.attrs::JSONB)::TEXT
$fn$;

UPDATE resources SET doc = gi_resource_doc(resources);

-- Rendered into the row being written (BEFORE), which has the same effect as
-- SQLite's AFTER trigger updating the row it just wrote, without writing the
-- row twice. An UPDATE that names none of these columns (doc itself, say)
-- leaves doc as it is.
CREATE FUNCTION gi_resources_doc() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
BEGIN
    NEW.doc := gi_resource_doc(NEW);
    RETURN NEW;
END
$fn$;

CREATE TRIGGER resources_doc_insert BEFORE INSERT ON resources
    FOR EACH ROW EXECUTE FUNCTION gi_resources_doc();

CREATE TRIGGER resources_doc_update BEFORE UPDATE OF datacenter_id, kind, name, state, tenant,
    project, gpu_model, gpu_count, attrs, metadata, version, updated_at ON resources
    FOR EACH ROW EXECUTE FUNCTION gi_resources_doc();

-- A renamed data center's name in its resources' documents (json_set: the
-- key is set, or added when attrs had removed it; a document that is not an
-- object is left as it is).
CREATE FUNCTION gi_datacenters_doc_rename() RETURNS TRIGGER LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE resources
    SET doc = CASE WHEN jsonb_typeof(doc::JSONB) = 'object'
                   THEN jsonb_set(doc::JSONB, '{datacenter}', to_jsonb(NEW.name))::TEXT
                   ELSE doc END
    WHERE datacenter_id = NEW.id;
    RETURN NULL;
END
$fn$;

CREATE TRIGGER datacenters_doc_rename AFTER UPDATE OF name ON datacenters
    FOR EACH ROW EXECUTE FUNCTION gi_datacenters_doc_rename();
