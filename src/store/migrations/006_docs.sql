-- Each resource's API representation, rendered once per write (by the
-- triggers below, in the writing transaction) instead of once per read:
-- list pages pass these documents through untouched. SQLite-specific (JSON1
-- functions); a PostgreSQL store renders with jsonb_build_object instead.
ALTER TABLE resources ADD COLUMN doc TEXT;

UPDATE resources SET doc = json_patch(json_object('id', resources.id, 'datacenter_id', resources.datacenter_id,
        'datacenter', (SELECT d.name FROM datacenters d WHERE d.id = resources.datacenter_id), 'kind', resources.kind, 'name', resources.name, 'state', resources.state,
        'tenant', resources.tenant, 'project', resources.project, 'gpu_model', resources.gpu_model,
        'gpu_count', resources.gpu_count, 'metadata', json(resources.metadata), 'version', resources.version,
        'created_at', strftime('%Y-%m-%dT%H:%M:%SZ', resources.created_at, 'unixepoch'),
        'updated_at', strftime('%Y-%m-%dT%H:%M:%SZ', resources.updated_at, 'unixepoch')), resources.attrs);

CREATE TRIGGER resources_doc_insert AFTER INSERT ON resources BEGIN
    UPDATE resources SET doc = json_patch(json_object('id', NEW.id, 'datacenter_id', NEW.datacenter_id,
        'datacenter', (SELECT d.name FROM datacenters d WHERE d.id = NEW.datacenter_id), 'kind', NEW.kind, 'name', NEW.name, 'state', NEW.state,
        'tenant', NEW.tenant, 'project', NEW.project, 'gpu_model', NEW.gpu_model,
        'gpu_count', NEW.gpu_count, 'metadata', json(NEW.metadata), 'version', NEW.version,
        'created_at', strftime('%Y-%m-%dT%H:%M:%SZ', NEW.created_at, 'unixepoch'),
        'updated_at', strftime('%Y-%m-%dT%H:%M:%SZ', NEW.updated_at, 'unixepoch')), NEW.attrs)
    WHERE id = NEW.id;
END;

CREATE TRIGGER resources_doc_update AFTER UPDATE OF datacenter_id, kind, name, state, tenant,
    project, gpu_model, gpu_count, attrs, metadata, version, updated_at ON resources BEGIN
    UPDATE resources SET doc = json_patch(json_object('id', NEW.id, 'datacenter_id', NEW.datacenter_id,
        'datacenter', (SELECT d.name FROM datacenters d WHERE d.id = NEW.datacenter_id), 'kind', NEW.kind, 'name', NEW.name, 'state', NEW.state,
        'tenant', NEW.tenant, 'project', NEW.project, 'gpu_model', NEW.gpu_model,
        'gpu_count', NEW.gpu_count, 'metadata', json(NEW.metadata), 'version', NEW.version,
        'created_at', strftime('%Y-%m-%dT%H:%M:%SZ', NEW.created_at, 'unixepoch'),
        'updated_at', strftime('%Y-%m-%dT%H:%M:%SZ', NEW.updated_at, 'unixepoch')), NEW.attrs)
    WHERE id = NEW.id;
END;

CREATE TRIGGER datacenters_doc_rename AFTER UPDATE OF name ON datacenters BEGIN
    UPDATE resources SET doc = json_set(doc, '$.datacenter', NEW.name)
    WHERE datacenter_id = NEW.id;
END;
