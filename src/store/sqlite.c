/* SQLite implementation of store.h: a small pool of WAL-mode connections,
 * each with its own cache of prepared statements. All SQL is static text
 * written in the subset PostgreSQL also accepts; values are always bound. */
#include "store/db.h"
#include "store/store.h"
#include "core/log.h"
#include "core/observation.h"
#include "core/status.h"
#include "core/util.h"
#include "store/embedded.h"
#include "store/gpu_sql.h"
#include "store/links.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

/* ---- statements ---- */

#define RES_SELECT                                                                                 \
    "SELECT r.id, r.datacenter_id, d.name AS datacenter, r.kind, r.name, r.state, r.tenant, "      \
    "r.project, r.gpu_model, r.gpu_count, r.attrs, r.metadata, r.version, r.created_at, "          \
    "r.updated_at FROM resources r JOIN datacenters d ON d.id = r.datacenter_id "
/* Filters common to every list variant; the variant prefix adds the
 * equality terms the planner can serve from an index. */
#define RES_WHERE_COMMON                                                                           \
    "(:dc = 0 OR r.datacenter_id = :dc) AND (:kind IS NULL OR r.kind = :kind) AND "                \
    "(:state IS NULL OR r.state = :state) AND (:tenant IS NULL OR r.tenant = :tenant) AND "        \
    "(:project IS NULL OR r.project = :project) AND (:q IS NULL OR r.name LIKE :q ESCAPE '!' "     \
    "OR r.attrs LIKE :q ESCAPE '!' OR r.tenant LIKE :q ESCAPE '!') "
#define RES_W_DK "WHERE r.datacenter_id = :dc AND r.kind = :kind AND "
#define RES_W_D "WHERE r.datacenter_id = :dc AND "
#define RES_W_K "WHERE r.kind = :kind AND "
#define RES_W_A "WHERE "
#define RES_KEY_TEXT                                                                               \
    "CASE :sort WHEN 'name' THEN r.name WHEN 'state' THEN r.state WHEN 'kind' THEN r.kind "        \
    "WHEN 'tenant' THEN r.tenant WHEN 'project' THEN r.project WHEN 'gpu_model' THEN r.gpu_model " \
    "WHEN 'datacenter' THEN d.name END"
#define RES_KEY_NUM                                                                                \
    "CASE :sort WHEN 'gpu_count' THEN r.gpu_count WHEN 'created_at' THEN r.created_at "            \
    "WHEN 'updated_at' THEN r.updated_at WHEN 'id' THEN r.id END"
#define PAGE "LIMIT :limit OFFSET :offset"
#define O_ID "ORDER BY r.id " PAGE
#define O_ASC "ORDER BY " RES_KEY_TEXT ", " RES_KEY_NUM ", r.id " PAGE
#define O_DESC "ORDER BY " RES_KEY_TEXT " DESC, " RES_KEY_NUM " DESC, r.id DESC " PAGE
/* List rows are the stored API documents (resources.doc, kept by the
 * triggers of migration 006): the hottest read path builds nothing per row. */
#define RES_DOC_SELECT "SELECT r.doc FROM resources r JOIN datacenters d ON d.id = r.datacenter_id "
#define RES_LIST(w, o) RES_DOC_SELECT w RES_WHERE_COMMON o
#define RES_COUNT(w) "SELECT COUNT(*) FROM resources r " w RES_WHERE_COMMON

#define DC_KIND_N(kind)                                                                            \
    "(SELECT COALESCE(SUM(c.n), 0) FROM dc_counts c WHERE c.datacenter_id = d.id AND c.kind = "    \
    "'" kind "')"
#define DC_SELECT                                                                                  \
    "SELECT d.id, d.name, d.location, d.rows_count AS \"rows\", d.created_at, "                    \
    "d.updated_at, " DC_KIND_N("server") " AS servers, " DC_KIND_N("vm") " AS vms, " DC_KIND_N(    \
        "storage") " AS storages, " DC_KIND_N("switch") " AS switches, " DC_KIND_N("infiniband") " AS infiniband FROM datacenters d "
#define DC_WHERE "WHERE (:q IS NULL OR d.name LIKE :q ESCAPE '!' OR d.location LIKE :q ESCAPE '!') "
#define DC_KEY_TEXT "CASE :sort WHEN 'name' THEN d.name WHEN 'location' THEN d.location END"
#define DC_KEY_NUM                                                                                 \
    "CASE :sort WHEN 'id' THEN d.id WHEN 'created_at' THEN d.created_at WHEN 'rows' THEN "         \
    "d.rows_count END"

/* Sort keys of the GPU list; NULLs (no telemetry yet) sort first. */
#define GPU_KEY_TEXT                                                                               \
    "CASE :sort WHEN 'host' THEN h.hostname WHEN 'model' THEN g.model WHEN 'cluster' THEN "        \
    "g.cluster WHEN 'team' THEN g.team WHEN 'datacenter' THEN d.name END"
#define GPU_KEY_NUM                                                                                \
    "CASE :sort WHEN 'util_pct' THEN g.util_pct WHEN 'mem_used_mib' THEN g.mem_used_mib WHEN "     \
    "'power_w' THEN g.power_w WHEN 'temp_c' THEN g.temp_c WHEN 'last_seen_at' THEN "               \
    "g.last_seen_at WHEN 'first_seen_at' THEN g.first_seen_at WHEN 'observed_at' THEN "            \
    "g.observed_at END"
#define GPU_SELECT                                                                                 \
    "SELECT g.uuid, g.parent_uuid, g.idx AS \"index\", g.vendor, g.model, g.serial, "              \
    "g.pci_bus_id, g.memory_total_mib, g.driver, g.vbios, g.mig_mode, g.mig_profile, g.team, "     \
    "g.env, g.cluster, h.hostname AS host, h.datacenter_id, d.name AS datacenter, s.name AS "      \
    "source, g.first_seen_at, g.last_seen_at, g.missing_since, g.sample_at, g.util_pct, "          \
    "g.mem_used_mib, g.power_w, g.temp_c, g.ecc_corrected, g.ecc_uncorrected, g.xid_last, "        \
    "rs.name AS reading_source, " GPU_OBSERVED " AS observed_at, " GPU_OBSERVED " AS newest_at, "  \
    "CASE WHEN " GPU_IS_STALE " THEN 1 ELSE 0 END AS stale, " GPU_STATE " AS state, "              \
    "l.resource_id FROM gpus g LEFT JOIN hosts h ON h.id = g.host_id LEFT JOIN datacenters d ON "  \
    "d.id = h.datacenter_id LEFT JOIN sources s ON s.id = g.source_id LEFT JOIN sources rs ON "    \
    "rs.id = g.reading_source_id LEFT JOIN host_links l ON l.host_id = g.host_id "
#define GPU_WHERE                                                                                  \
    "WHERE (:host IS NULL OR h.hostname = :host) AND (:cluster IS NULL OR g.cluster = :cluster) "  \
    "AND (:model IS NULL OR g.model = :model) AND (:dc = 0 OR h.datacenter_id = :dc) AND (:sid = " \
    "0 OR g.source_id = :sid) AND (:stale_f < 0 OR (:stale_f = 1) = " GPU_IS_STALE ") AND (:q IS " \
    "NULL OR g.uuid LIKE :q ESCAPE '!' OR g.serial LIKE :q ESCAPE '!' OR g.model LIKE :q ESCAPE "  \
    "'!' OR h.hostname LIKE :q ESCAPE '!') AND (:gstate IS NULL OR " GPU_STATE " = :gstate) AND "  \
    "(:team IS NULL OR g.team = :team) AND (:env IS NULL OR g.env = :env) "
/* Figures over a whole GPU filter (not a page), in one pass. */
#define GPU_STATE_N(st) "COALESCE(SUM(CASE WHEN x.st = '" st "' THEN 1 ELSE 0 END), 0) AS " st ", "
#define GPU_SUMMARY_SQL                                                                            \
    "SELECT COUNT(*) AS total, " GPU_STATE_N("in_use") GPU_STATE_N("idle") GPU_STATE_N("unknown")  \
        GPU_STATE_N("stale")                                                                       \
            GPU_STATE_N("missing") "AVG(CASE WHEN x.st IN ('in_use', 'idle') "                     \
                                   "THEN x.u END) AS util_avg FROM (SELECT " GPU_STATE             \
                                   " AS st, g.util_pct AS u FROM gpus g LEFT JOIN hosts h ON "     \
                                   "h.id = g.host_id " GPU_WHERE ") x"

/* A source's GPU count is defined as the GPU list's ?source= filter is:
 * the records (MIG instances included, missing ones too) it owns. */
#define SRC_GPUS_OWNED "(SELECT COUNT(*) FROM gpus og WHERE og.source_id = s.id)"
#define SRC_SELECT                                                                                 \
    "SELECT s.id, s.name, s.kind, s.config, s.team, s.env, s.cluster, s.interval_s, s.enabled, "   \
    "s.precedence, s.last_attempt_at, s.last_success_at, s.last_error, " SRC_GPUS_OWNED " AS "     \
    "gpus_reported, s.gpus_reported AS gpus_last_report, CASE WHEN "                               \
    "s.last_success_at IS NULL OR s.last_success_at < :stale THEN 1 ELSE 0 END AS stale, "         \
    "s.warnings_total, s.last_warning, s.last_warning_at, "                                        \
    "s.created_at, s.updated_at FROM sources s "

#define K8S_POD_SELECT                                                                             \
    "SELECT p.uid, p.namespace, p.name, p.node, p.phase, p.gpus, p.mig_devices, p.owner_kind, "    \
    "p.owner_name, p.labels, s.name AS source, s.cluster, p.started_at, "                          \
    "p.first_seen_at, p.last_seen_at, p.ended_at FROM k8s_pods p JOIN sources s ON s.id = "        \
    "p.source_id "
#define K8S_POD_WHERE                                                                              \
    "WHERE (:cluster IS NULL OR s.cluster = :cluster) AND (:node IS NULL OR p.node = :node) AND "  \
    "(:ns IS NULL OR p.namespace = :ns) AND (:active < 0 OR (:active = 1) = (p.ended_at IS "       \
    "NULL)) "

#define STATEMENTS(X)                                                                              \
    X(AUDIT_LIST,                                                                                  \
      "SELECT id, at AS occurred_at, actor, action, entity, entity_id, before_json AS before, "    \
      "after_json AS after FROM audit WHERE (:entity IS NULL OR entity = :entity) "                \
      "AND (:eid = 0 OR entity_id = :eid) AND (:actor IS NULL OR actor = :actor) "                 \
      "ORDER BY id DESC " PAGE)                                                                    \
    X(AUDIT_COUNT, "SELECT COUNT(*) FROM audit WHERE (:entity IS NULL OR entity = :entity) AND "   \
                   "(:eid = 0 OR entity_id = :eid) AND (:actor IS NULL OR actor = :actor)")        \
    X(TOKEN_ADD, "INSERT INTO tokens (name, role, hash, created_at) VALUES (:name, :role, :hash, " \
                 ":now)")                                                                          \
    X(TOKEN_BY_HASH,                                                                               \
      "SELECT id, name, role, revoked_at, last_used_at, source_id, hosts, limit_cluster FROM "     \
      "tokens WHERE hash = :hash")                                                                 \
    X(TOKEN_TOUCH, "UPDATE tokens SET last_used_at = :now WHERE id = :id")                         \
    X(TOKEN_LIST, "SELECT id, name, role, created_at, last_used_at, revoked_at, hosts, "           \
                  "limit_cluster FROM tokens ORDER BY id")                                         \
    X(TOKEN_GET, "SELECT id, name, role, created_at, last_used_at, revoked_at FROM tokens WHERE "  \
                 "id = :id")                                                                       \
    X(TOKEN_REVOKE, "UPDATE tokens SET revoked_at = :now WHERE id = :id AND revoked_at IS NULL")   \
    X(USER_UPSERT, "INSERT INTO users (name, role, password_hash, created_at) VALUES (:name, "     \
                   ":role, :hash, :now) ON CONFLICT (name) DO UPDATE SET role = excluded.role, "   \
                   "password_hash = excluded.password_hash")                                       \
    X(USER_GET, "SELECT id, role, password_hash FROM users WHERE name = :name")                    \
    X(SESSION_ADD, "INSERT INTO sessions (hash, user_id, created_at, expires_at) VALUES (:hash, "  \
                   ":uid, :now, :exp)")                                                            \
    X(SESSION_AUTH, "SELECT u.name, u.role FROM sessions s JOIN users u ON u.id = s.user_id "      \
                    "WHERE s.hash = :hash AND s.expires_at > :now")                                \
    X(SESSION_DEL, "DELETE FROM sessions WHERE hash = :hash OR expires_at <= :now")                \
    X(SESSION_DEL_USER,                                                                            \
      "DELETE FROM sessions WHERE user_id IN (SELECT id FROM users WHERE name = "                  \
      ":name)")                                                                                    \
    X(DC_ADD, "INSERT INTO datacenters (name, location, rows_count, created_at, updated_at) "      \
              "VALUES (:name, :location, :rows, :now, :now)")                                      \
    X(DC_GET, DC_SELECT "WHERE d.id = :id")                                                        \
    X(DC_LIST_ID, DC_SELECT DC_WHERE "ORDER BY d.id " PAGE)                                        \
    X(DC_LIST_ASC, DC_SELECT DC_WHERE "ORDER BY " DC_KEY_TEXT ", " DC_KEY_NUM ", d.id " PAGE)      \
    X(DC_LIST_DESC,                                                                                \
      DC_SELECT DC_WHERE "ORDER BY " DC_KEY_TEXT " DESC, " DC_KEY_NUM " DESC, d.id DESC " PAGE)    \
    X(DC_COUNT, "SELECT COUNT(*) FROM datacenters d " DC_WHERE)                                    \
    X(DC_UPDATE, "UPDATE datacenters SET name = COALESCE(:name, name), location = "                \
                 "COALESCE(:location, location), rows_count = CASE WHEN :rows < 0 THEN "           \
                 "rows_count ELSE :rows END, updated_at = :now WHERE id = :id")                    \
    X(DC_BY_NAME, "SELECT id FROM datacenters WHERE name = :name")                                 \
    X(DC_DELETE, "DELETE FROM datacenters WHERE id = :id")                                         \
    X(DC_COUNTS, "SELECT kind, state, n, gpus FROM dc_counts WHERE datacenter_id = :id")           \
    X(DC_BASIC, "SELECT id, name, location FROM datacenters WHERE id = :id")                       \
    X(RES_COUNT_FAST, "SELECT COALESCE(SUM(n), 0) FROM dc_counts WHERE (:dc = 0 OR datacenter_id " \
                      "= :dc) AND (:kind IS NULL OR kind = :kind) AND (:state IS NULL OR state = " \
                      ":state)")                                                                   \
    X(RES_ADD, "INSERT INTO resources (datacenter_id, kind, name, state, tenant, project, "        \
               "gpu_model, gpu_count, attrs, metadata, created_at, updated_at) VALUES (:dc, "      \
               ":kind, :name, :state, :tenant, :project, :gpu_model, :gpu_count, :attrs, "         \
               ":metadata, :now, :now)")                                                           \
    X(RES_GET, RES_SELECT "WHERE r.id = :id")                                                      \
    X(RES_KIND, "SELECT kind, datacenter_id FROM resources WHERE id = :id")                        \
    X(RES_UPDATE, "UPDATE resources SET datacenter_id = :dc, kind = :kind, name = :name, state = " \
                  ":state, tenant = :tenant, project = :project, gpu_model = :gpu_model, "         \
                  "gpu_count = :gpu_count, attrs = :attrs, metadata = :metadata, version = "       \
                  "version + 1, updated_at = :now WHERE id = :id AND version = :version")          \
    X(RES_DELETE, "DELETE FROM resources WHERE id = :id")                                          \
    X(RES_ALLOC, "UPDATE resources SET state = 'in_use', tenant = :tenant, project = :project, "   \
                 "version = version + 1, updated_at = :now WHERE id = :id AND state = "            \
                 "'available'")                                                                    \
    X(RES_RELEASE, "UPDATE resources SET state = 'available', tenant = NULL, project = NULL, "     \
                   "version = version + 1, updated_at = :now WHERE id = :id AND state IN "         \
                   "('in_use', 'reserved')")                                                       \
    X(ALLOC_OPEN, "INSERT INTO allocations (resource_id, tenant, project, actor, started_at) "     \
                  "VALUES (:id, :tenant, :project, :actor, :now)")                                 \
    X(ALLOC_CLOSE, "UPDATE allocations SET ended_at = :now WHERE resource_id = :id AND ended_at "  \
                   "IS NULL")                                                                      \
    X(ALLOC_HISTORY, "SELECT id, tenant, project, actor, started_at, ended_at FROM allocations "   \
                     "WHERE resource_id = :id ORDER BY started_at DESC, id DESC LIMIT 1000")       \
    X(ALLOC_FIND, "SELECT id FROM resources WHERE datacenter_id = :dc AND kind = :kind AND state " \
                  "= 'available' AND gpu_count >= :min_gpus AND (:gpu_model IS NULL OR "           \
                  "gpu_model = :gpu_model) ORDER BY gpu_count, id LIMIT :limit")                   \
    X(SOURCE_GET, "SELECT id, kind FROM sources WHERE name = :name")                               \
    X(SOURCE_ADD, "INSERT INTO sources (name, kind, team, env, cluster, created_at, updated_at) "  \
                  "VALUES (:name, :kind, :team, :env, :cluster, :now, :now)")                      \
    X(SOURCE_DEFAULTS, "SELECT team, env, cluster, precedence, name FROM sources WHERE id = :id")  \
    X(SOURCE_OK,                                                                                   \
      "UPDATE sources SET last_attempt_at = :now, last_success_at = :now, last_error = "           \
      "NULL, gpus_reported = (SELECT COUNT(*) FROM gpus WHERE source_id = :id AND "                \
      "missing_since IS NULL) WHERE id = :id")                                                     \
    X(SOURCE_WARN, "UPDATE sources SET warnings_total = warnings_total + :n, last_warning = "      \
                   ":msg, last_warning_at = :now WHERE id = :id")                                  \
    X(SOURCE_LIST, SRC_SELECT "ORDER BY s.id")                                                     \
    X(TOKEN_SOURCE, "UPDATE tokens SET source_id = :sid WHERE id = :id")                           \
    X(TOKEN_SCOPE, "UPDATE tokens SET hosts = :hosts, limit_cluster = :cluster WHERE id = :id")    \
    X(HOST_CLUSTER, "SELECT cluster FROM hosts WHERE hostname = :host")                            \
    X(HOST_OWNER,                                                                                  \
      "SELECT h.source_id, COALESCE(o.precedence, 0) FROM hosts h LEFT JOIN sources o "            \
      "ON o.id = h.source_id WHERE h.hostname = :host")                                            \
    X(BATCH_ADD, "INSERT INTO ingest_batches (source_id, batch_id, received_at, samples) VALUES "  \
                 "(:sid, :bid, :now, :n)")                                                         \
    X(HOST_UPSERT,                                                                                 \
      "INSERT INTO hosts (hostname, machine_id, serial, cluster, datacenter_id, "                  \
      "source_id, first_seen_at, last_seen_at) VALUES (:host, :mid, :serial, "                     \
      "COALESCE(:cluster_set, :cluster), :dc, :sid, :now, :now) ON CONFLICT (hostname) DO UPDATE " \
      "SET machine_id = CASE WHEN :own = 1 THEN COALESCE(excluded.machine_id, hosts.machine_id) "  \
      "ELSE COALESCE(hosts.machine_id, excluded.machine_id) END, serial = CASE WHEN :own = 1 "     \
      "THEN COALESCE(excluded.serial, hosts.serial) ELSE COALESCE(hosts.serial, excluded.serial) " \
      "END, cluster = CASE WHEN :own = 1 THEN COALESCE(:cluster_set, hosts.cluster, :cluster) "    \
      "ELSE COALESCE(hosts.cluster, :cluster_set, :cluster) END, datacenter_id = CASE WHEN :own "  \
      "= 1 THEN COALESCE(excluded.datacenter_id, hosts.datacenter_id) ELSE "                       \
      "COALESCE(hosts.datacenter_id, excluded.datacenter_id) END, source_id = CASE WHEN :own = 1 " \
      "THEN excluded.source_id ELSE hosts.source_id END, last_seen_at = CASE WHEN :own = 1 THEN "  \
      "excluded.last_seen_at ELSE hosts.last_seen_at END RETURNING id, hostname, "                 \
      "machine_id, serial")                                                                        \
    X(HOST_DC, "SELECT datacenter_id FROM resources WHERE kind = 'server' AND (name = :host OR "   \
               "name = :short) ORDER BY id LIMIT 1")                                               \
    X(GPU_IDENT, "SELECT g.host_id, g.serial, h.hostname, g.model, g.id, g.source_id, "            \
                 "COALESCE(o.precedence, 0), o.name FROM gpus g LEFT JOIN hosts h ON h.id = "      \
                 "g.host_id LEFT JOIN sources o ON o.id = g.source_id WHERE g.uuid = :uuid")       \
    X(GPU_SERIAL_OTHER, "SELECT uuid FROM gpus WHERE serial = :serial AND uuid <> :uuid LIMIT 1")  \
    X(GPU_UPSERT,                                                                                  \
      "INSERT INTO gpus (uuid, parent_uuid, host_id, idx, vendor, model, serial, pci_bus_id, "     \
      "memory_total_mib, driver, vbios, mig_mode, mig_profile, mig_instance, team, env, cluster, " \
      "source_id, first_seen_at, last_seen_at, observed_at) VALUES (:uuid, :parent, :host, :idx, " \
      ":vendor, :model, :serial, :bus, :mem, :driver, :vbios, :mig, :profile, :inst, :team, "      \
      ":env, "                                                                                     \
      "COALESCE(:cluster_set, :cluster), :sid, :now, :now, :obs) ON CONFLICT (uuid) DO UPDATE "    \
      "SET "                                                                                       \
      "parent_uuid = COALESCE(excluded.parent_uuid, "                                              \
      "gpus.parent_uuid), host_id = excluded.host_id, idx = COALESCE(excluded.idx, gpus.idx), "    \
      "vendor = COALESCE(excluded.vendor, gpus.vendor), model = COALESCE(excluded.model, "         \
      "gpus.model), serial = COALESCE(excluded.serial, gpus.serial), pci_bus_id = "                \
      "COALESCE(excluded.pci_bus_id, gpus.pci_bus_id), memory_total_mib = "                        \
      "COALESCE(excluded.memory_total_mib, gpus.memory_total_mib), driver = "                      \
      "COALESCE(excluded.driver, gpus.driver), vbios = COALESCE(excluded.vbios, gpus.vbios), "     \
      "mig_mode = COALESCE(excluded.mig_mode, gpus.mig_mode), mig_profile = "                      \
      "COALESCE(excluded.mig_profile, gpus.mig_profile), mig_instance = "                          \
      "COALESCE(excluded.mig_instance, gpus.mig_instance), team = COALESCE(:team_set, gpus.team, " \
      "excluded.team), env = COALESCE(:env_set, gpus.env, excluded.env), cluster = "               \
      "COALESCE(:cluster_set, gpus.cluster, :cluster), source_id = excluded.source_id, "           \
      "last_seen_at = excluded.last_seen_at, observed_at = CASE WHEN gpus.observed_at IS NULL OR " \
      "gpus.observed_at < excluded.observed_at THEN excluded.observed_at ELSE gpus.observed_at "   \
      "END, missing_since = NULL RETURNING id")                                                    \
    X(GPU_OBSERVED_SET, "UPDATE gpus SET observed_at = :obs WHERE id = :gid AND (observed_at IS "  \
                        "NULL OR observed_at < :obs)")                                             \
    X(GPU_FILL,                                                                                    \
      "UPDATE gpus SET parent_uuid = COALESCE(parent_uuid, :parent), host_id = COALESCE(host_id, " \
      ":host), idx = COALESCE(idx, :idx), vendor = COALESCE(vendor, :vendor), model = "            \
      "COALESCE(model, :model), serial = COALESCE(serial, :serial), pci_bus_id = "                 \
      "COALESCE(pci_bus_id, :bus), memory_total_mib = COALESCE(memory_total_mib, :mem), driver = " \
      "COALESCE(driver, :driver), vbios = COALESCE(vbios, :vbios), mig_mode = COALESCE(mig_mode, " \
      ":mig), mig_profile = COALESCE(mig_profile, :profile), mig_instance = "                      \
      "COALESCE(mig_instance, :inst), team = COALESCE(team, :team), env = COALESCE(env, :env), "   \
      "cluster = COALESCE(cluster, :cluster_set, :cluster) WHERE id = :gid")                       \
    X(CONFLICT_GET, "SELECT theirs, ours FROM gpu_conflicts WHERE gpu_id = :gid AND source_id = "  \
                    ":sid AND field = :field")                                                     \
    X(CONFLICT_SET,                                                                                \
      "INSERT INTO gpu_conflicts (gpu_id, source_id, field, theirs, ours, first_at, last_at) "     \
      "VALUES (:gid, :sid, :field, :theirs, :ours, :now, :now) ON CONFLICT (gpu_id, source_id, "   \
      "field) DO UPDATE SET theirs = excluded.theirs, ours = excluded.ours, first_at = CASE WHEN " \
      "gpu_conflicts.theirs = excluded.theirs AND gpu_conflicts.ours = excluded.ours THEN "        \
      "gpu_conflicts.first_at ELSE excluded.first_at END, last_at = excluded.last_at")             \
    X(CONFLICT_DEL, "DELETE FROM gpu_conflicts WHERE gpu_id = :gid AND source_id = :sid AND "      \
                    "(:field IS NULL OR field = :field)")                                          \
    X(GPU_CONFLICTS, "SELECT s.name AS source, c.field, c.theirs, c.ours, c.first_at, c.last_at "  \
                     "FROM gpu_conflicts c JOIN gpus g ON g.id = c.gpu_id JOIN sources s ON s.id " \
                     "= c.source_id WHERE g.uuid = :uuid ORDER BY s.name, c.field")                \
    X(MIG_OTHER, "SELECT uuid FROM gpus WHERE parent_uuid = :parent AND mig_instance = :inst AND " \
                 "uuid <> :uuid ORDER BY id LIMIT 1")                                              \
    X(GPU_EXISTS, "SELECT COUNT(*) FROM gpus WHERE uuid = :uuid")                                  \
    X(RENAME_GPU, "UPDATE gpus SET uuid = :to WHERE uuid = :from")                                 \
    X(RENAME_EVENTS, "UPDATE gpu_events SET gpu_uuid = :to WHERE gpu_uuid = :from")                \
    X(RENAME_PROCS, "UPDATE gpu_processes SET gpu_uuid = :to WHERE gpu_uuid = :from")              \
    X(RENAME_PODS, "UPDATE gpu_pods SET gpu_uuid = :to WHERE gpu_uuid = :from")                    \
    X(PROV_SET, "INSERT INTO gpu_provenance (gpu_uuid, field, value, source_id, set_at) VALUES "   \
                "(:uuid, :field, :value, :sid, :now) ON CONFLICT (gpu_uuid, field) DO UPDATE SET " \
                "value = excluded.value, source_id = excluded.source_id, set_at = "                \
                "excluded.set_at WHERE gpu_provenance.value IS NOT excluded.value OR "             \
                "gpu_provenance.source_id IS NOT excluded.source_id OR gpu_provenance.set_at < "   \
                "excluded.set_at - 60")                                                            \
    X(PROV_FILL, "INSERT INTO gpu_provenance (gpu_uuid, field, value, source_id, set_at) VALUES "  \
                 "(:uuid, :field, :value, :sid, :now) ON CONFLICT (gpu_uuid, field) DO NOTHING")   \
    X(EVENT_ADD, "INSERT INTO gpu_events (gpu_uuid, at, kind, detail, source_id) VALUES (:uuid, "  \
                 ":now, :kind, :detail, :sid)")                                                    \
    X(GPU_ON_HOST, "SELECT uuid FROM gpus WHERE host_id = :host AND missing_since IS NULL AND "    \
                   "source_id = :sid")                                                             \
    X(GPU_MISSING, "UPDATE gpus SET missing_since = :now WHERE uuid = :uuid")                      \
    X(SAMPLE_ADD,                                                                                  \
      "INSERT INTO gpu_samples (ts, gpu_id, util_avg, util_max, mem_used_mib, "                    \
      "power_avg_w, energy_j, temp_c, ecc_corrected, ecc_uncorrected, xid, source_id) "            \
      "VALUES (:ts, :gid, :ua, :um, :mem, :pw, :en, :temp, :ecc_c, :ecc_u, :xid, "                 \
      ":sid) ON CONFLICT DO NOTHING")                                                              \
    X(GPU_LATEST,                                                                                  \
      "UPDATE gpus SET sample_at = :ts, util_pct = :ua, mem_used_mib = :mem, power_w "             \
      "= :pw, temp_c = :temp, ecc_corrected = COALESCE(:ecc_c, ecc_corrected), "                   \
      "ecc_uncorrected = COALESCE(:ecc_u, ecc_uncorrected), xid_last = COALESCE(:xid, "            \
      "xid_last), reading_source_id = :sid, observed_at = CASE WHEN observed_at IS NULL OR "       \
      "observed_at < :obs THEN :obs ELSE observed_at END WHERE id = :gid AND CASE WHEN "           \
      "source_id = :sid THEN (reading_source_id IS NULL OR reading_source_id <> :sid OR "          \
      "sample_at IS NULL OR sample_at <= :ts) ELSE ((reading_source_id IS NULL OR "                \
      "reading_source_id <> source_id) AND (sample_at IS NULL OR sample_at <= :ts)) END")          \
    X(PROC_ADD, "INSERT INTO gpu_processes (ts, gpu_uuid, pid, name, username, uid, container, "   \
                "pod_uid, pod, namespace, used_mib, source_id) VALUES (:ts, :uuid, :pid, :name, "  \
                ":user, :uid, :container, :pod_uid, :pod, :ns, :mem, :sid) ON CONFLICT DO "        \
                "NOTHING")                                                                         \
    X(POD_ADD, "INSERT INTO gpu_pods (ts, gpu_uuid, namespace, pod, container, source_id) VALUES " \
               "(:ts, :uuid, :ns, :pod, :container, :sid) ON CONFLICT DO NOTHING")                 \
    X(GPU_PODS, "SELECT ts AS seen_at, namespace, pod, container FROM gpu_pods WHERE gpu_uuid = "  \
                ":uuid AND ts = (SELECT MAX(ts) FROM gpu_pods WHERE gpu_uuid = :uuid) ORDER BY "   \
                "namespace, pod")                                                                  \
    X(GPU_NODE_PODS, "SELECT p.namespace, p.name, p.gpus, p.mig_devices, p.phase, p.started_at "   \
                     "FROM k8s_pods p WHERE p.ended_at IS NULL AND p.node IN (SELECT "             \
                     "h.hostname FROM gpus g JOIN hosts h ON h.id = g.host_id WHERE g.uuid = "     \
                     ":uuid) ORDER BY p.namespace, p.name")                                        \
    X(GPU_LIST, GPU_SELECT GPU_WHERE "ORDER BY h.hostname, g.idx, g.uuid " PAGE)                   \
    X(GPU_LIST_ASC, GPU_SELECT GPU_WHERE "ORDER BY " GPU_KEY_TEXT ", " GPU_KEY_NUM                 \
                                         ", h.hostname, g.idx, g.uuid " PAGE)                      \
    X(GPU_LIST_DESC, GPU_SELECT GPU_WHERE "ORDER BY " GPU_KEY_TEXT " DESC, " GPU_KEY_NUM           \
                                          " DESC, h.hostname, g.idx, g.uuid " PAGE)                \
    X(GPU_COUNT, "SELECT COUNT(*) FROM gpus g LEFT JOIN hosts h ON h.id = g.host_id " GPU_WHERE)   \
    X(GPU_GET, GPU_SELECT "WHERE g.uuid = :uuid")                                                  \
    X(GPU_PROV, "SELECT p.field, p.value, s.name AS source, p.set_at FROM gpu_provenance p LEFT "  \
                "JOIN sources s ON s.id = p.source_id WHERE p.gpu_uuid = :uuid ORDER BY p.field")  \
    X(GPU_PROCS, "SELECT ts AS seen_at, CASE WHEN pid < 0 THEN NULL ELSE pid END AS pid, name, "   \
                 "username AS user, uid, container, pod_uid, "                                     \
                 "pod, namespace, used_mib FROM gpu_processes WHERE gpu_uuid = :uuid AND ts = "    \
                 "(SELECT MAX(ts) FROM gpu_processes WHERE gpu_uuid = :uuid) ORDER BY pid")        \
    X(GPU_EVENTS, "SELECT e.id, e.at AS occurred_at, e.kind, e.detail, s.name AS source FROM "     \
                  "gpu_events e LEFT "                                                             \
                  "JOIN sources s ON s.id = e.source_id WHERE e.gpu_uuid = :uuid ORDER BY e.at "   \
                  "DESC, e.id DESC LIMIT 100")                                                     \
    X(GPU_CHILDREN, "SELECT uuid, mig_profile FROM gpus WHERE parent_uuid = :uuid ORDER BY uuid")  \
    X(SRC_ADD, "INSERT INTO sources (name, kind, config, team, env, cluster, interval_s, "         \
               "enabled, precedence, created_at, updated_at) VALUES (:name, :kind, :config, "      \
               ":team, :env, :cluster, :interval, :enabled, :prec, :now, :now)")                   \
    X(SRC_GET, SRC_SELECT "WHERE s.id = :id")                                                      \
    X(SRC_UPDATE, "UPDATE sources SET name = COALESCE(:name, name), config = COALESCE(:config, "   \
                  "config), team = COALESCE(:team, team), env = COALESCE(:env, env), cluster = "   \
                  "COALESCE(:cluster, cluster), interval_s = CASE WHEN :interval < 0 THEN "        \
                  "interval_s ELSE :interval END, enabled = CASE WHEN :enabled < 0 THEN enabled "  \
                  "ELSE :enabled END, precedence = CASE WHEN :has_prec = 1 THEN :prec ELSE "       \
                  "precedence END, updated_at = :now WHERE id = :id")                              \
    X(SRC_DELETE, "DELETE FROM sources WHERE id = :id")                                            \
    X(SRC_DUE, "SELECT id, name, kind, config, team, env, cluster FROM sources WHERE enabled = 1 " \
               "AND kind NOT IN ('push', 'csv') AND (last_attempt_at IS NULL OR last_attempt_at "  \
               "+ interval_s "                                                                     \
               "<= :now) ORDER BY COALESCE(last_attempt_at, 0), id")                               \
    X(SRC_RECORD,                                                                                  \
      "UPDATE sources SET last_attempt_at = :now, last_success_at = CASE WHEN :err "               \
      "IS NULL THEN :now ELSE last_success_at END, last_error = :err, gpus_reported = "            \
      "CASE WHEN :err IS NULL THEN :n ELSE gpus_reported END WHERE id = :id")                      \
    X(METRICS_GPUS,                                                                                \
      "SELECT COUNT(*) AS total, COALESCE(SUM(CASE WHEN " GPU_IS_STALE " THEN 1 "                  \
      "ELSE 0 END), 0) AS stale, COALESCE(SUM(CASE WHEN g.missing_since IS NOT NULL "              \
      "THEN 1 ELSE 0 END), 0) AS missing, COALESCE(SUM(CASE WHEN g.parent_uuid IS "                \
      "NOT NULL THEN 1 ELSE 0 END), 0) AS mig, COALESCE(SUM(CASE WHEN g.util_pct IS "              \
      "NULL AND g.missing_since IS NULL AND NOT " GPU_IS_STALE " THEN 1 ELSE 0 END), "             \
      "0) AS unknown FROM gpus g")                                                                 \
    X(GPU_SUMMARY, GPU_SUMMARY_SQL)                                                                \
    X(K8S_NODE_UPSERT,                                                                             \
      "INSERT INTO k8s_nodes (source_id, name, cluster, hostname, product, physical_gpus, "        \
      "gpu_capacity, gpu_allocatable, mig_devices, sharing, replicas, driver, cloud, region, "     \
      "zone, instance_type, ready, warning, first_seen_at, last_seen_at) VALUES (:sid, :name, "    \
      ":cluster, :hostname, :product, :phys, :cap, :alloc, :mig, :sharing, :replicas, :driver, "   \
      ":cloud, :region, :zone, :itype, :ready, :warning, :now, :now) ON CONFLICT (source_id, "     \
      "name) DO UPDATE SET cluster = excluded.cluster, hostname = excluded.hostname, product = "   \
      "excluded.product, physical_gpus = excluded.physical_gpus, gpu_capacity = "                  \
      "excluded.gpu_capacity, gpu_allocatable = excluded.gpu_allocatable, mig_devices = "          \
      "excluded.mig_devices, sharing = excluded.sharing, replicas = excluded.replicas, driver = "  \
      "excluded.driver, cloud = excluded.cloud, region = excluded.region, zone = excluded.zone, "  \
      "instance_type = excluded.instance_type, ready = excluded.ready, warning = "                 \
      "excluded.warning, seen = 1, last_seen_at = excluded.last_seen_at")                          \
    X(K8S_UNSEE_NODES, "UPDATE k8s_nodes SET seen = 0 WHERE source_id = :sid")                     \
    X(K8S_UNSEE_PODS, "UPDATE k8s_pods SET seen = 0 WHERE source_id = :sid AND ended_at IS NULL")  \
    X(K8S_NODE_GONE, "DELETE FROM k8s_nodes WHERE source_id = :sid AND seen = 0")                  \
    X(K8S_POD_UPSERT,                                                                              \
      "INSERT INTO k8s_pods (source_id, uid, namespace, name, node, phase, gpus, mig_devices, "    \
      "owner_kind, owner_name, labels, started_at, first_seen_at, last_seen_at, ended_at) VALUES " \
      "(:sid, :uid, :ns, :name, :node, :phase, :gpus, :mig, :okind, :oname, :labels, :started, "   \
      ":now, :now, :ended) ON CONFLICT (source_id, uid) DO UPDATE SET node = excluded.node, "      \
      "phase "                                                                                     \
      "= excluded.phase, gpus = excluded.gpus, mig_devices = excluded.mig_devices, labels = "      \
      "excluded.labels, started_at = COALESCE(excluded.started_at, k8s_pods.started_at), seen = "  \
      "1, last_seen_at = excluded.last_seen_at, ended_at = CASE WHEN excluded.ended_at IS NULL "   \
      "THEN "                                                                                      \
      "NULL ELSE COALESCE(k8s_pods.ended_at, excluded.ended_at) END")                              \
    X(K8S_POD_GONE, "UPDATE k8s_pods SET ended_at = :now WHERE source_id = :sid AND ended_at IS "  \
                    "NULL AND seen = 0")                                                           \
    X(K8S_HOST_CLUSTER,                                                                            \
      "UPDATE hosts SET cluster = :cluster WHERE hostname = :name OR hostname = "                  \
      ":hostname")                                                                                 \
    X(K8S_GPU_CLUSTER,                                                                             \
      "UPDATE gpus SET cluster = :cluster WHERE host_id IN (SELECT id FROM hosts "                 \
      "WHERE hostname = :name OR hostname = :hostname)")                                           \
    X(K8S_NODES,                                                                                   \
      "SELECT n.name, n.cluster, n.hostname, n.product, n.physical_gpus, "                         \
      "n.gpu_capacity, n.gpu_allocatable, n.mig_devices, n.sharing, n.replicas, "                  \
      "n.driver, n.cloud, n.region, n.zone, n.instance_type, n.ready, n.warning, "                 \
      "s.name AS source, n.first_seen_at, n.last_seen_at, (SELECT COALESCE(SUM(p.gpus), "          \
      "0) FROM k8s_pods p WHERE p.source_id = n.source_id AND p.node = n.name AND "                \
      "p.ended_at IS NULL) AS gpus_requested FROM k8s_nodes n JOIN sources s ON s.id = "           \
      "n.source_id WHERE (:cluster IS NULL OR n.cluster = :cluster) AND (:node IS NULL "           \
      "OR n.name = :node) ORDER BY n.cluster, n.name")                                             \
    X(K8S_PODS, K8S_POD_SELECT K8S_POD_WHERE "ORDER BY p.first_seen_at DESC, p.uid " PAGE)         \
    X(K8S_PODS_COUNT,                                                                              \
      "SELECT COUNT(*) FROM k8s_pods p JOIN sources s ON s.id = p.source_id " K8S_POD_WHERE)       \
    X(RES_LIST_DK_ID, RES_LIST(RES_W_DK, O_ID))                                                    \
    X(RES_LIST_DK_ASC, RES_LIST(RES_W_DK, O_ASC))                                                  \
    X(RES_LIST_DK_DESC, RES_LIST(RES_W_DK, O_DESC))                                                \
    X(RES_LIST_D_ID, RES_LIST(RES_W_D, O_ID))                                                      \
    X(RES_LIST_D_ASC, RES_LIST(RES_W_D, O_ASC))                                                    \
    X(RES_LIST_D_DESC, RES_LIST(RES_W_D, O_DESC))                                                  \
    X(RES_LIST_K_ID, RES_LIST(RES_W_K, O_ID))                                                      \
    X(RES_LIST_K_ASC, RES_LIST(RES_W_K, O_ASC))                                                    \
    X(RES_LIST_K_DESC, RES_LIST(RES_W_K, O_DESC))                                                  \
    X(RES_LIST_A_ID, RES_LIST(RES_W_A, O_ID))                                                      \
    X(RES_LIST_A_ASC, RES_LIST(RES_W_A, O_ASC))                                                    \
    X(RES_LIST_A_DESC, RES_LIST(RES_W_A, O_DESC))                                                  \
    X(RES_COUNT_DK, RES_COUNT(RES_W_DK))                                                           \
    X(RES_COUNT_D, RES_COUNT(RES_W_D))                                                             \
    X(RES_COUNT_K, RES_COUNT(RES_W_K))                                                             \
    X(RES_COUNT_A, RES_COUNT(RES_W_A))

#define AS_ENUM(id, sql) ST_##id,
#define AS_SQL(id, sql) sql,
enum stmt_id { STATEMENTS(AS_ENUM) ST__COUNT };
static const char *const stmt_sql[] = {STATEMENTS(AS_SQL)};

/* ---- statement access ---- */

static sqlite3_stmt *prep(struct conn *c, enum stmt_id id) { return db_prep(c, stmt_sql[id]); }

static int list_page(struct store *st, enum stmt_id count, enum stmt_id list, db_filter_binder bind,
                     const void *filter, const struct store_page *pg, json_t **items,
                     int64_t *total)
{
    return db_list_page(st, stmt_sql[count], stmt_sql[list], bind, filter, pg, items, total);
}

static int collect_with(struct store *st, enum stmt_id id, const char *name, int64_t v,
                        json_t **items)
{
    return db_collect_with(st, stmt_sql[id], name, v, items);
}

/* ---- credentials ---- */

int store_token_create(struct store *st, const char *actor, const char *name, enum gi_role role,
                       const char *hash, int64_t *id_out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *after = NULL;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":role", gi_role_name(role));
    db_bind_text(s, ":hash", hash);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    *id_out = sqlite3_last_insert_rowid(c->db);
    after = json_pack("{s:s, s:s}", "name", name, "role", gi_role_name(role));
    rc = db_audit(c, actor, "create", "token", *id_out, NULL, after);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(after);
    db_conn_put(st, c);
    return rc;
}

int store_token_ensure(struct store *st, const char *name, enum gi_role role, const char *hash)
{
    struct gi_principal p;
    int64_t id;
    int rc = store_token_auth(st, hash, &p);

    /* Hashes are unique, so a create that conflicts met the same token,
     * revoked. */
    if (rc == GI_NOT_FOUND)
        return store_token_create(st, "system", name, role, hash, &id);
    return rc;
}

int store_token_auth(struct store *st, const char *hash, struct gi_principal *out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_TOKEN_BY_HASH);
    int64_t now = gi_now(), id = 0, last = 0;
    int rc = GI_INTERNAL, step;

    if (!s)
        goto cleanup;
    db_bind_text(s, ":hash", hash);
    step = sqlite3_step(s);
    if (step != SQLITE_ROW) {
        rc = step == SQLITE_DONE ? GI_NOT_FOUND : db_map_rc(c->db, step);
        sqlite3_reset(s);
        goto cleanup;
    }
    rc = GI_OK;
    id = sqlite3_column_int64(s, 0);
    gi_strlcpy(out->name, (const char *)sqlite3_column_text(s, 1), sizeof out->name);
    if (gi_role_parse((const char *)sqlite3_column_text(s, 2), &out->role) != GI_OK)
        rc = GI_NOT_FOUND;
    if (sqlite3_column_type(s, 3) != SQLITE_NULL)
        rc = GI_NOT_FOUND; /* revoked */
    last = sqlite3_column_int64(s, 4);
    out->source_id = sqlite3_column_int64(s, 5);
    out->hosts[0] = out->cluster[0] = '\0';
    if (sqlite3_column_type(s, 6) != SQLITE_NULL)
        gi_strlcpy(out->hosts, (const char *)sqlite3_column_text(s, 6), sizeof out->hosts);
    if (sqlite3_column_type(s, 7) != SQLITE_NULL)
        gi_strlcpy(out->cluster, (const char *)sqlite3_column_text(s, 7), sizeof out->cluster);
    out->token_id = id;
    sqlite3_reset(s);
    /* Record use at most once a minute so reads stay reads. */
    if (rc == GI_OK && now - last >= 60 && (s = prep(c, ST_TOKEN_TOUCH)) != NULL) {
        db_bind_int(s, ":now", now);
        db_bind_int(s, ":id", id);
        if (db_exec_done(c, s) != GI_OK)
            gi_warn("could not record use of token %lld", (long long)id);
    }
cleanup:
    db_conn_put(st, c);
    return rc;
}

int store_token_list(struct store *st, json_t **items)
{
    return collect_with(st, ST_TOKEN_LIST, NULL, 0, items);
}

int store_token_revoke(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL, *after = NULL;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_GET)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, &before)) != GI_OK)
        goto cleanup;
    if (!json_is_null(json_object_get(before, "revoked_at"))) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_TOKEN_REVOKE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    after = json_deep_copy(before);
    {
        char ts[32];
        gi_time_format(gi_now(), ts, sizeof ts);
        json_object_set_new(after, "revoked_at", json_string(ts));
    }
    rc = db_audit(c, actor, "revoke", "token", id, before, after);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    json_decref(after);
    db_conn_put(st, c);
    return rc;
}

int store_user_set(struct store *st, const char *name, enum gi_role role, const char *pwhash)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    /* A new password or role ends the user's sessions, in the same
     * transaction, so no session outlives the credentials it was made
     * with. */
    if (!(s = prep(c, ST_SESSION_DEL_USER)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_USER_UPSERT)))
        goto cleanup;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":role", gi_role_name(role));
    db_bind_text(s, ":hash", pwhash);
    db_bind_int(s, ":now", gi_now());
    rc = db_exec_done(c, s);
cleanup:
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_user_get(struct store *st, const char *name, int64_t *id, enum gi_role *role,
                   char *pwhash, size_t len)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_USER_GET);
    int rc = GI_INTERNAL, step;

    if (s) {
        db_bind_text(s, ":name", name);
        step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            *id = sqlite3_column_int64(s, 0);
            rc = gi_role_parse((const char *)sqlite3_column_text(s, 1), role);
            gi_strlcpy(pwhash, (const char *)sqlite3_column_text(s, 2), len);
        } else {
            rc = step == SQLITE_DONE ? GI_NOT_FOUND : db_map_rc(c->db, step);
        }
        sqlite3_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_session_create(struct store *st, const char *hash, int64_t user_id, int64_t expires_at)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    int64_t now = gi_now();
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    /* Expired sessions are pruned whenever one is made (SESSION_DEL with no
     * hash deletes only the expired ones). */
    if (!(s = prep(c, ST_SESSION_DEL)))
        goto cleanup;
    db_bind_text(s, ":hash", NULL);
    db_bind_int(s, ":now", now);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SESSION_ADD)))
        goto cleanup;
    db_bind_text(s, ":hash", hash);
    db_bind_int(s, ":uid", user_id);
    db_bind_int(s, ":now", now);
    db_bind_int(s, ":exp", expires_at);
    rc = db_exec_done(c, s);
cleanup:
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_session_auth(struct store *st, const char *hash, struct gi_principal *out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_SESSION_AUTH);
    int rc = GI_INTERNAL, step;

    if (s) {
        db_bind_text(s, ":hash", hash);
        db_bind_int(s, ":now", gi_now());
        step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            gi_strlcpy(out->name, (const char *)sqlite3_column_text(s, 0), sizeof out->name);
            rc = gi_role_parse((const char *)sqlite3_column_text(s, 1), &out->role);
            out->token_id = 0;
            out->source_id = 0;
        } else {
            rc = step == SQLITE_DONE ? GI_NOT_FOUND : db_map_rc(c->db, step);
        }
        sqlite3_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_session_delete(struct store *st, const char *hash)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_SESSION_DEL);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_text(s, ":hash", hash);
        db_bind_int(s, ":now", gi_now());
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}

/* ---- audit ---- */

static void bind_audit_filter(sqlite3_stmt *s, const void *filter)
{
    const struct store_audit_filter *f = filter;
    db_bind_text(s, ":entity", f->entity);
    db_bind_int(s, ":eid", f->entity_id);
    db_bind_text(s, ":actor", f->actor);
}

int store_audit_list(struct store *st, const struct store_audit_filter *f,
                     const struct store_page *pg, json_t **items, int64_t *total)
{
    return list_page(st, ST_AUDIT_COUNT, ST_AUDIT_LIST, bind_audit_filter, f, pg, items, total);
}

/* ---- data centers ---- */

static int dc_get(struct conn *c, int64_t id, json_t **out)
{
    sqlite3_stmt *s = prep(c, ST_DC_GET);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    return db_fetch_one(c, s, out);
}

int store_dc_create(struct store *st, const char *actor, const struct store_dc *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":location", in->location ? in->location : "");
    db_bind_int(s, ":rows", in->rows < 0 ? 0 : in->rows);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    id = sqlite3_last_insert_rowid(c->db);
    if ((rc = dc_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "create", "datacenter", id, NULL, *out);
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    db_conn_put(st, c);
    return rc;
}

static void bind_dc_filter(sqlite3_stmt *s, const void *q) { db_bind_like(s, ":q", q); }

int store_dc_list(struct store *st, const char *q, const struct store_page *pg, json_t **items,
                  int64_t *total)
{
    enum stmt_id list = !pg->sort ? ST_DC_LIST_ID : pg->desc ? ST_DC_LIST_DESC : ST_DC_LIST_ASC;
    return list_page(st, ST_DC_COUNT, list, bind_dc_filter, q, pg, items, total);
}

int store_dc_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = dc_get(c, id, out);
    db_conn_put(st, c);
    return rc;
}

int store_dc_update(struct store *st, const char *actor, int64_t id, const struct store_dc *in,
                    json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_UPDATE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":location", in->location);
    db_bind_int(s, ":rows", in->rows);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "update", "datacenter", id, before, *out);
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

/* Per-kind resource counts of a data center (every kind present) and,
 * when gpus is not NULL, its servers' GPU totals by allocation state. Read
 * from the trigger-kept dc_counts table. */
static int dc_counts(struct conn *c, int64_t id, json_t **out, json_t **gpus)
{
    sqlite3_stmt *s = prep(c, ST_DC_COUNTS);
    json_int_t n[5] = {0}, total = 0, allocated = 0, available = 0;
    static const char *const kinds[5] = {"server", "vm", "storage", "switch", "infiniband"};
    int step;

    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *k = (const char *)sqlite3_column_text(s, 0);
        const char *state = (const char *)sqlite3_column_text(s, 1);
        json_int_t cnt = sqlite3_column_int64(s, 2), g = sqlite3_column_int64(s, 3);
        for (int i = 0; i < 5; i++)
            if (strcmp(k, kinds[i]) == 0)
                n[i] += cnt;
        /* Servers carry the GPUs; a VM's GPUs are its host's. */
        if (strcmp(k, "server") != 0 || strcmp(state, "retired") == 0)
            continue;
        total += g;
        if (strcmp(state, "available") == 0)
            available += g;
        else if (strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0)
            allocated += g;
    }
    sqlite3_reset(s);
    if (step != SQLITE_DONE)
        return db_map_rc(c->db, step);
    *out = json_pack("{s:I, s:I, s:I, s:I, s:I}", "servers", n[0], "vms", n[1], "storages", n[2],
                     "switches", n[3], "infiniband", n[4]);
    if (gpus)
        *gpus = json_pack("{s:I, s:I, s:I, s:I}", "total", total, "allocated", allocated,
                          "available", available, "unavailable", total - allocated - available);
    return GI_OK;
}

int store_dc_delete(struct store *st, const char *actor, int64_t id, bool force, json_t **counts)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL, *cnt = NULL;
    json_int_t total = 0;
    const char *k;
    json_t *v;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    if ((rc = dc_get(c, id, &before)) != GI_OK)
        goto cleanup;
    if ((rc = dc_counts(c, id, &cnt, NULL)) != GI_OK)
        goto cleanup;
    json_object_foreach(cnt, k, v)
        total += json_integer_value(v);
    if (total > 0 && !force) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_DC_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    json_object_set(before, "deleted_resources", cnt);
    rc = db_audit(c, actor, "delete", "datacenter", id, before, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    if (counts)
        *counts = cnt;
    else
        json_decref(cnt);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_dc_overview(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *dc = NULL, *cnt = NULL, *gpus = NULL;
    int rc = GI_INTERNAL;

    /* One read transaction so counts and GPU totals agree. */
    db_read_begin(c);
    if (!(s = prep(c, ST_DC_BASIC)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_fetch_one(c, s, &dc)) != GI_OK)
        goto cleanup;
    if ((rc = dc_counts(c, id, &cnt, &gpus)) != GI_OK)
        goto cleanup;
    *out =
        json_pack("{s:I, s:s?, s:s?, s:o, s:o}", "datacenter_id", (json_int_t)id, "name",
                  json_string_value(json_object_get(dc, "name")), "location",
                  json_string_value(json_object_get(dc, "location")), "counts", cnt, "gpus", gpus);
    cnt = gpus = NULL;
    rc = *out ? GI_OK : GI_INTERNAL;
cleanup:
    db_read_end(c);
    json_decref(dc);
    json_decref(cnt);
    json_decref(gpus);
    db_conn_put(st, c);
    return rc;
}

int store_dc_id_by_name(struct store *st, const char *name, int64_t *id)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_DC_BY_NAME);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_text(s, ":name", name);
        rc = db_fetch_int(c, s, id);
    }
    db_conn_put(st, c);
    return rc;
}

/* ---- resources ---- */

static int res_get(struct conn *c, int64_t id, json_t **out)
{
    sqlite3_stmt *s = prep(c, ST_RES_GET);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    return db_fetch_one(c, s, out);
}

static void bind_resource(sqlite3_stmt *s, const struct store_resource *in)
{
    db_bind_int(s, ":dc", in->datacenter_id);
    db_bind_text(s, ":kind", in->kind);
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":state", in->state ? in->state : "available");
    db_bind_text(s, ":tenant", in->tenant);
    db_bind_text(s, ":project", in->project);
    db_bind_text(s, ":gpu_model", in->gpu_model);
    db_bind_int(s, ":gpu_count", in->gpu_count);
    /* Both columns are NOT NULL: no attributes or metadata is "{}". */
    if (in->attrs)
        db_bind_json(s, ":attrs", in->attrs);
    else
        db_bind_text(s, ":attrs", "{}");
    if (in->metadata)
        db_bind_json(s, ":metadata", in->metadata);
    else
        db_bind_text(s, ":metadata", "{}");
    db_bind_int(s, ":now", gi_now());
}

/* Inserts one resource (and an allocation interval when it starts held)
 * inside the caller's transaction; *id receives its id. */
static int res_insert(struct conn *c, const char *actor, const struct store_resource *in,
                      int64_t *id, json_t **after)
{
    sqlite3_stmt *s = prep(c, ST_RES_ADD);
    int rc;

    if (!s)
        return GI_INTERNAL;
    bind_resource(s, in);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    *id = sqlite3_last_insert_rowid(c->db);
    if ((rc = links_server_changed(c, actor, *id)) != GI_OK)
        return rc;
    if (in->state && strcmp(in->state, "in_use") == 0 && in->tenant) {
        if (!(s = prep(c, ST_ALLOC_OPEN)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", *id);
        db_bind_text(s, ":tenant", in->tenant);
        db_bind_text(s, ":project", in->project);
        db_bind_text(s, ":actor", actor);
        db_bind_int(s, ":now", gi_now());
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    if ((rc = res_get(c, *id, after)) != GI_OK)
        return rc;
    return db_audit(c, actor, "create", "resource", *id, NULL, *after);
}

int store_res_create(struct store *st, const char *actor, const struct store_resource *in,
                     json_t **out)
{
    struct conn *c = db_conn_get(st);
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = res_insert(c, actor, in, &id, out);
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    db_conn_put(st, c);
    return rc;
}

int store_res_import(struct store *st, const char *actor, const struct store_resource *rows,
                     size_t n, bool dry_run, int *row_status)
{
    struct conn *c = db_conn_get(st);
    int64_t id;
    int rc = db_tx_begin(c), failed = GI_OK;

    /* A constraint failure undoes only its statement, so the transaction
     * goes on and every row's conflict is found. */
    for (size_t i = 0; rc == GI_OK && i < n; i++) {
        json_t *after = NULL;
        int one = res_insert(c, actor, &rows[i], &id, &after);
        json_decref(after);
        row_status[i] = one;
        if (one == GI_CONFLICT || one == GI_NOT_FOUND) {
            if (failed == GI_OK)
                failed = one;
        } else {
            rc = one;
        }
    }
    if (rc == GI_OK)
        rc = failed;
    /* A rehearsal runs every insert and constraint, then undoes them
     * (db_tx_end rolls back for any status but GI_OK). */
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

/* Appends a statement's single text column, row by row, to *buf as a
 * comma-separated list (the inside of a JSON array); *rows counts them. */
static int collect_text(struct conn *c, sqlite3_stmt *s, char **buf, size_t *len, size_t *cap,
                        size_t *rows)
{
    int rc;

    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(s, 0);
        size_t n = (size_t)sqlite3_column_bytes(s, 0);
        if (*len + n + 2 > *cap) {
            size_t nc = *cap ? *cap * 2 : 65536;
            char *nb;
            while (nc < *len + n + 2)
                nc *= 2;
            if ((nb = realloc(*buf, nc)) == NULL) {
                sqlite3_reset(s);
                return GI_INTERNAL;
            }
            *buf = nb;
            *cap = nc;
        }
        if (*rows)
            (*buf)[(*len)++] = ',';
        memcpy(*buf + *len, t ? t : "null", t ? n : 4);
        *len += t ? n : 4;
        (*buf)[*len] = '\0';
        (*rows)++;
    }
    sqlite3_reset(s);
    return rc == SQLITE_DONE ? GI_OK : db_map_rc(c->db, rc);
}

int store_res_list_text(struct store *st, const struct store_res_filter *f,
                        const struct store_page *pg, char **items, size_t *len, size_t *rows,
                        int64_t *total)
{
    struct conn *c = db_conn_get(st);
    /* Pick the variant whose WHERE prefix lets the planner use an index. */
    int variant = f->datacenter_id && f->kind ? 0 : f->datacenter_id ? 1 : f->kind ? 2 : 3;
    int order = !pg->sort ? 0 : pg->desc ? 2 : 1;
    enum stmt_id list = (enum stmt_id)(ST_RES_LIST_DK_ID + variant * 3 + order);
    /* Without tenant/project/text filters the trigger-kept counts answer. */
    enum stmt_id count = !f->tenant && !f->project && !(f->q && *f->q)
                             ? ST_RES_COUNT_FAST
                             : (enum stmt_id)(ST_RES_COUNT_DK + variant);
    size_t cap = 0;
    sqlite3_stmt *s;
    int rc = GI_INTERNAL;

    *items = NULL;
    *len = *rows = 0;
    db_read_begin(c);
    for (int pass = 0; pass < 2; pass++) {
        if (!(s = prep(c, pass == 0 ? count : list)))
            goto cleanup;
        db_bind_int(s, ":dc", f->datacenter_id);
        db_bind_text(s, ":kind", f->kind);
        db_bind_text(s, ":state", f->state);
        db_bind_text(s, ":tenant", f->tenant);
        db_bind_text(s, ":project", f->project);
        db_bind_like(s, ":q", f->q);
        db_bind_page(s, pg);
        rc = pass == 0 ? db_fetch_int(c, s, total) : collect_text(c, s, items, len, &cap, rows);
        if (rc != GI_OK)
            goto cleanup;
    }
    if (*items == NULL && (*items = calloc(1, 1)) == NULL)
        rc = GI_INTERNAL;
cleanup:
    db_read_end(c);
    if (rc != GI_OK) {
        free(*items);
        *items = NULL;
    }
    db_conn_put(st, c);
    return rc;
}

int store_res_list(struct store *st, const struct store_res_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    char *text = NULL, *wrapped;
    size_t len, rows;
    json_error_t err;
    int rc = store_res_list_text(st, f, pg, &text, &len, &rows, total);

    if (rc != GI_OK)
        return rc;
    wrapped = malloc(len + 3);
    if (wrapped == NULL) {
        free(text);
        return GI_INTERNAL;
    }
    wrapped[0] = '[';
    memcpy(wrapped + 1, text, len);
    wrapped[len + 1] = ']';
    wrapped[len + 2] = '\0';
    free(text);
    *items = json_loadb(wrapped, len + 2, 0, &err);
    free(wrapped);
    return *items ? GI_OK : GI_INTERNAL;
}

int store_res_get(struct store *st, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = res_get(c, id, out);
    db_conn_put(st, c);
    return rc;
}

int store_res_kind(struct store *st, int64_t id, char *kind, size_t len, int64_t *datacenter_id)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_RES_KIND);
    int rc = GI_INTERNAL, step;

    if (s) {
        db_bind_int(s, ":id", id);
        step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            gi_strlcpy(kind, (const char *)sqlite3_column_text(s, 0), len);
            *datacenter_id = sqlite3_column_int64(s, 1);
            rc = GI_OK;
        } else {
            rc = step == SQLITE_DONE ? GI_NOT_FOUND : db_map_rc(c->db, step);
        }
        sqlite3_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

/* Opens or closes the allocation interval of a resource whose state moved
 * between held and not held. */
static int alloc_track(struct conn *c, const char *actor, int64_t id, const char *old_state,
                       const struct store_resource *in)
{
    const char *state = in->state ? in->state : "available"; /* as bind_resource stores it */
    bool was = strcmp(old_state, "in_use") == 0 || strcmp(old_state, "reserved") == 0;
    bool now_held = strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0;
    sqlite3_stmt *s;
    int rc;

    if (was && !now_held) {
        if (!(s = prep(c, ST_ALLOC_CLOSE)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        db_bind_int(s, ":now", gi_now());
        return db_exec_done(c, s);
    }
    if (!was && now_held) {
        if (!(s = prep(c, ST_ALLOC_OPEN)))
            return GI_INTERNAL;
        db_bind_int(s, ":id", id);
        db_bind_text(s, ":tenant", in->tenant ? in->tenant : "");
        db_bind_text(s, ":project", in->project);
        db_bind_text(s, ":actor", actor);
        db_bind_int(s, ":now", gi_now());
        rc = db_exec_done(c, s);
        return rc;
    }
    return GI_OK;
}

int store_res_update(struct store *st, const char *actor, int64_t id, int64_t version,
                     const struct store_resource *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_UPDATE)))
        goto cleanup;
    bind_resource(s, in);
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":version", version);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (sqlite3_changes(c->db) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = alloc_track(c, actor, id, json_string_value(json_object_get(before, "state")), in);
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = links_server_changed(c, actor, id)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "update", "resource", id, before, *out);
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_res_delete(struct store *st, const char *actor, int64_t id, bool force, json_t **held)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    const char *state;
    int rc = db_tx_begin(c);

    if (held)
        *held = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    /* Checked inside the transaction, so an allocation cannot slip in
     * between the check and the delete. */
    state = json_string_value(json_object_get(before, "state"));
    if (!force && state && (strcmp(state, "in_use") == 0 || strcmp(state, "reserved") == 0)) {
        rc = GI_CONFLICT;
        if (held)
            *held = json_incref(before);
        goto cleanup;
    }
    if ((rc = links_server_removing(c, actor, id)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "delete", "resource", id, before, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

/* available -> in_use inside the caller's transaction; GI_CONFLICT when
 * the resource is not available at this instant. */
static int res_allocate(struct conn *c, const char *actor, int64_t id, const char *tenant,
                        const char *project, json_t **after)
{
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc;

    if ((rc = res_get(c, id, &before)) != GI_OK)
        return rc;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_ALLOC)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":tenant", tenant);
    db_bind_text(s, ":project", project);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (sqlite3_changes(c->db) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_OPEN)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":tenant", tenant);
    db_bind_text(s, ":project", project);
    db_bind_text(s, ":actor", actor);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, after)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "allocate", "resource", id, before, *after);
cleanup:
    json_decref(before);
    return rc;
}

int store_res_allocate(struct store *st, const char *actor, int64_t id, const char *tenant,
                       const char *project, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc == GI_OK)
        rc = res_allocate(c, actor, id, tenant, project, out);
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    db_conn_put(st, c);
    return rc;
}

int store_res_release(struct store *st, const char *actor, int64_t id, json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_RES_RELEASE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if (sqlite3_changes(c->db) != 1) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_CLOSE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = res_get(c, id, out)) != GI_OK)
        goto cleanup;
    rc = db_audit(c, actor, "release", "resource", id, before, *out);
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    db_conn_put(st, c);
    return rc;
}

int store_res_allocations(struct store *st, int64_t id, json_t **items)
{
    return collect_with(st, ST_ALLOC_HISTORY, ":id", id, items);
}

int store_alloc_bulk(struct store *st, const char *actor, const struct store_alloc_req *req,
                     json_t **items, int64_t *available)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    int64_t ids[1000];
    int64_t n = 0;
    json_t *arr = json_array();
    int rc = db_tx_begin(c), step = SQLITE_DONE;

    *items = NULL;
    *available = 0;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_ALLOC_FIND)))
        goto cleanup;
    db_bind_int(s, ":dc", req->datacenter_id);
    db_bind_text(s, ":kind", req->kind);
    db_bind_int(s, ":min_gpus", req->min_gpus);
    db_bind_text(s, ":gpu_model", req->gpu_model);
    db_bind_int(s, ":limit", req->count < 1000 ? req->count : 1000);
    while (n < 1000 && (step = sqlite3_step(s)) == SQLITE_ROW)
        ids[n++] = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE) {
        rc = db_map_rc(c->db, step);
        goto cleanup;
    }
    *available = n;
    if (n < req->count) {
        rc = GI_CONFLICT;
        goto cleanup;
    }
    for (int64_t i = 0; i < n; i++) {
        json_t *after = NULL;
        if ((rc = res_allocate(c, actor, ids[i], req->tenant, req->project, &after)) != GI_OK)
            goto cleanup;
        json_array_append_new(arr, after);
    }
    rc = GI_OK;
cleanup:
    rc = db_tx_end(c, rc);
    if (rc == GI_OK) {
        *items = arr;
        arr = NULL;
    }
    json_decref(arr);
    db_conn_put(st, c);
    return rc;
}

/* ---- GPU discovery ---- */

/* Finds or creates the source `name` of `kind` on c (inside the caller's
 * transaction, if any): GI_CONFLICT when the name belongs to a source of
 * another kind. */
static int source_ensure(struct conn *c, const char *name, const char *kind, const char *team,
                         const char *env, const char *cluster, int64_t *id)
{
    sqlite3_stmt *s;
    int rc = GI_INTERNAL, step;

    if (!(s = prep(c, ST_SOURCE_GET)))
        return GI_INTERNAL;
    db_bind_text(s, ":name", name);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        const char *have = (const char *)sqlite3_column_text(s, 1);
        *id = sqlite3_column_int64(s, 0);
        rc = have && strcmp(have, kind) == 0 ? GI_OK : GI_CONFLICT;
    } else {
        rc = step == SQLITE_DONE ? GI_NOT_FOUND : db_map_rc(c->db, step);
    }
    sqlite3_reset(s);
    if (rc != GI_NOT_FOUND)
        return rc;
    if (!(s = prep(c, ST_SOURCE_ADD)))
        return GI_INTERNAL;
    db_bind_text(s, ":name", name);
    db_bind_text(s, ":kind", kind);
    db_bind_opt_text(s, ":team", team);
    db_bind_opt_text(s, ":env", env);
    db_bind_opt_text(s, ":cluster", cluster);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) == GI_OK)
        *id = sqlite3_last_insert_rowid(c->db);
    return rc;
}

int store_source_ensure(struct store *st, const char *name, const char *kind, const char *team,
                        const char *env, const char *cluster, int64_t *id)
{
    struct conn *c = db_conn_get(st);
    int rc = source_ensure(c, name, kind, team, env, cluster, id);

    db_conn_put(st, c);
    return rc;
}

int store_token_set_source(struct store *st, int64_t token_id, int64_t source_id)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_TOKEN_SOURCE);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", token_id);
        db_bind_int(s, ":sid", source_id);
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_token_set_scope(struct store *st, int64_t token_id, const char *hosts,
                          const char *cluster)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_TOKEN_SCOPE);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", token_id);
        db_bind_opt_text(s, ":hosts", hosts);
        db_bind_opt_text(s, ":cluster", cluster);
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_host_cluster(struct store *st, const char *hostname, char *buf, size_t len)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_HOST_CLUSTER);
    int rc = GI_INTERNAL, step;

    buf[0] = '\0';
    if (s) {
        db_bind_text(s, ":host", hostname);
        step = sqlite3_step(s);
        if (step == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
            gi_strlcpy(buf, (const char *)sqlite3_column_text(s, 0), len);
        rc = step == SQLITE_ROW    ? GI_OK
             : step == SQLITE_DONE ? GI_NOT_FOUND
                                   : db_map_rc(c->db, step);
        sqlite3_reset(s);
    }
    db_conn_put(st, c);
    return rc;
}

/* Records a GPU event inside the caller's transaction. */
static int gpu_event(struct conn *c, int64_t sid, const char *uuid, const char *kind,
                     json_t *detail)
{
    sqlite3_stmt *s = prep(c, ST_EVENT_ADD);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_text(s, ":uuid", uuid);
        db_bind_int(s, ":now", gi_now());
        db_bind_text(s, ":kind", kind);
        db_bind_json(s, ":detail", detail);
        db_bind_int(s, ":sid", sid);
        rc = db_exec_done(c, s);
    }
    json_decref(detail);
    return rc;
}

/* Whether source sid (of precedence prec) owns the host `name`: nobody
 * owns it yet, it already does, or it outranks the owner. */
static int host_owned(struct conn *c, int64_t sid, int64_t prec, const char *name, bool *own)
{
    sqlite3_stmt *s = prep(c, ST_HOST_OWNER);
    int step;

    *own = true;
    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":host", name);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL)
        *own = sqlite3_column_int64(s, 0) == sid || prec > sqlite3_column_int64(s, 1);
    sqlite3_reset(s);
    return step == SQLITE_ROW || step == SQLITE_DONE ? GI_OK : db_map_rc(c->db, step);
}

/* Resolves the reporting host to a hosts row, finding its data center by
 * name or by an inventory server of the same name. The labels a host
 * reports about itself win over the source's default cluster, which fills
 * only what is absent; a source that does not own the host only fills what
 * the owner left absent. */
static int ingest_host(struct conn *c, int64_t sid, int64_t prec, const struct gi_host_obs *h,
                       const char *cluster, int64_t *host_id)
{
    sqlite3_stmt *s;
    int64_t dc = 0;
    char shortname[GI_HOST_LEN], ident[3][GI_HOST_LEN];
    bool own;
    int rc, step;

    if (h->datacenter[0]) {
        if (!(s = prep(c, ST_DC_BY_NAME)))
            return GI_INTERNAL;
        db_bind_text(s, ":name", h->datacenter);
        rc = db_fetch_int(c, s, &dc);
        if (rc != GI_OK && rc != GI_NOT_FOUND)
            return rc;
    }
    if (dc == 0) {
        gi_strlcpy(shortname, h->hostname, sizeof shortname);
        shortname[strcspn(shortname, ".")] = '\0';
        if (!(s = prep(c, ST_HOST_DC)))
            return GI_INTERNAL;
        db_bind_text(s, ":host", h->hostname);
        db_bind_text(s, ":short", shortname);
        rc = db_fetch_int(c, s, &dc);
        if (rc != GI_OK && rc != GI_NOT_FOUND)
            return rc;
    }
    if ((rc = host_owned(c, sid, prec, h->hostname, &own)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_HOST_UPSERT)))
        return GI_INTERNAL;
    db_bind_text(s, ":host", h->hostname);
    db_bind_opt_text(s, ":mid", h->machine_id);
    db_bind_opt_text(s, ":serial", h->serial);
    db_bind_opt_text(s, ":cluster_set", h->cluster);
    db_bind_opt_text(s, ":cluster", cluster);
    db_bind_int(s, ":own", own ? 1 : 0);
    if (dc)
        db_bind_int(s, ":dc", dc);
    else
        db_bind_text(s, ":dc", NULL);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    step = sqlite3_step(s);
    if (step != SQLITE_ROW) {
        sqlite3_reset(s);
        return db_map_rc(c->db, step);
    }
    *host_id = sqlite3_column_int64(s, 0);
    gi_strlcpy(ident[0], (const char *)sqlite3_column_text(s, 1), sizeof ident[0]);
    for (int i = 1; i < 3; i++)
        gi_strlcpy(ident[i],
                   sqlite3_column_type(s, i + 1) == SQLITE_NULL
                       ? ""
                       : (const char *)sqlite3_column_text(s, i + 1),
                   sizeof ident[i]);
    sqlite3_reset(s);
    /* The stored identity (after merging) decides whether to re-match. */
    return links_host_seen(c, *host_id, ident[0], ident[1], ident[2]);
}

/* Records which source set one identity field; skips absent values. */
static int prov(struct conn *c, int64_t sid, const char *uuid, const char *field, const char *v)
{
    sqlite3_stmt *s;

    if (v == NULL || *v == '\0')
        return GI_OK;
    if (!(s = prep(c, ST_PROV_SET)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":value", v);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    return db_exec_done(c, s);
}

/* MIG instances reported without a UUID (dcgm-exporter) are named
 * "MIG-<parent>/<GPU instance>"; one reported with NVML's UUID is the same
 * instance. Sets canon to the name the instance is stored under: an
 * existing real UUID wins over the made-up name, and a record stored under
 * the made-up name is renamed when the real UUID arrives. */
static int mig_canonical(struct conn *c, const struct gi_gpu_obs *g, char canon[GI_UUID_LEN])
{
    /* Provenance follows the rename by its foreign key (ON UPDATE CASCADE). */
    static const enum stmt_id renames[] = {ST_RENAME_GPU, ST_RENAME_EVENTS, ST_RENAME_PROCS,
                                           ST_RENAME_PODS};
    char made_up[GI_UUID_LEN], other[GI_UUID_LEN] = "";
    sqlite3_stmt *s;
    int64_t n = 0;
    int rc, step;

    gi_strlcpy(canon, g->uuid, GI_UUID_LEN);
    if (g->parent_uuid[0] == '\0' || g->mig_instance < 0)
        return GI_OK;
    snprintf(made_up, sizeof made_up, "MIG-%.80s/%d", g->parent_uuid, g->mig_instance);
    if (!(s = prep(c, ST_MIG_OTHER)))
        return GI_INTERNAL;
    db_bind_text(s, ":parent", g->parent_uuid);
    db_bind_int(s, ":inst", g->mig_instance);
    db_bind_text(s, ":uuid", g->uuid);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        gi_strlcpy(other, (const char *)sqlite3_column_text(s, 0), sizeof other);
    sqlite3_reset(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return db_map_rc(c->db, step);
    if (other[0] == '\0')
        return GI_OK;
    if (strcmp(g->uuid, made_up) == 0) {
        gi_strlcpy(canon, other, GI_UUID_LEN); /* the real UUID is known */
        return GI_OK;
    }
    if (strcmp(other, made_up) != 0)
        return GI_OK; /* two real UUIDs: leave both */
    if (!(s = prep(c, ST_GPU_EXISTS)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", g->uuid);
    if ((rc = db_fetch_int(c, s, &n)) != GI_OK || n > 0)
        return rc;
    for (size_t i = 0; i < sizeof renames / sizeof *renames; i++) {
        if (!(s = prep(c, renames[i])))
            return GI_INTERNAL;
        db_bind_text(s, ":to", g->uuid);
        db_bind_text(s, ":from", made_up);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* The source a batch comes from: its id, name, precedence and the label
 * defaults (team, env, cluster) that fill only what a report leaves absent. */
struct reporter {
    int64_t id, precedence;
    char name[64];
    const char *defaults[3];
};

/* What the store holds about a GPU before a report is applied. */
struct gpu_ident {
    bool known;
    int64_t id, host_id, owner, owner_precedence;
    char serial[GI_SERIAL_LEN], hostname[GI_HOST_LEN], model[GI_NAME_LEN], owner_name[64];
};

static void col_copy(sqlite3_stmt *s, int i, char *out, size_t len)
{
    out[0] = '\0';
    if (sqlite3_column_type(s, i) != SQLITE_NULL)
        gi_strlcpy(out, (const char *)sqlite3_column_text(s, i), len);
}

static int gpu_ident_load(struct conn *c, const char *uuid, struct gpu_ident *id)
{
    sqlite3_stmt *s = prep(c, ST_GPU_IDENT);
    int step;

    memset(id, 0, sizeof *id);
    if (!s)
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        id->known = true;
        id->host_id = sqlite3_column_int64(s, 0);
        col_copy(s, 1, id->serial, sizeof id->serial);
        col_copy(s, 2, id->hostname, sizeof id->hostname);
        col_copy(s, 3, id->model, sizeof id->model);
        id->id = sqlite3_column_int64(s, 4);
        id->owner = sqlite3_column_int64(s, 5); /* 0: none (NULL) */
        id->owner_precedence = sqlite3_column_int64(s, 6);
        col_copy(s, 7, id->owner_name, sizeof id->owner_name);
    }
    sqlite3_reset(s);
    return step == SQLITE_ROW || step == SQLITE_DONE ? GI_OK : db_map_rc(c->db, step);
}

/* One identity field as a non-owning source reports it. A differing value
 * is kept in gpu_conflicts (never written over the owner's) and a new
 * disagreement is a `conflict` event; an agreeing or absent value clears
 * the field's conflict. */
static int ident_conflict(struct conn *c, const struct reporter *src, const struct gpu_ident *id,
                          const char *uuid, const char *field, const char *theirs, const char *ours,
                          int64_t *events)
{
    sqlite3_stmt *s;
    bool same = false;
    int rc, step;

    if (theirs[0] == '\0' || ours[0] == '\0' || strcmp(theirs, ours) == 0) {
        if (!(s = prep(c, ST_CONFLICT_DEL)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", id->id);
        db_bind_int(s, ":sid", src->id);
        db_bind_text(s, ":field", field);
        return db_exec_done(c, s);
    }
    if (!(s = prep(c, ST_CONFLICT_GET)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", id->id);
    db_bind_int(s, ":sid", src->id);
    db_bind_text(s, ":field", field);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        same = sqlite3_column_type(s, 0) != SQLITE_NULL &&
               sqlite3_column_type(s, 1) != SQLITE_NULL &&
               strcmp((const char *)sqlite3_column_text(s, 0), theirs) == 0 &&
               strcmp((const char *)sqlite3_column_text(s, 1), ours) == 0;
    sqlite3_reset(s);
    if (step != SQLITE_ROW && step != SQLITE_DONE)
        return db_map_rc(c->db, step);
    if (!(s = prep(c, ST_CONFLICT_SET)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", id->id);
    db_bind_int(s, ":sid", src->id);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":theirs", theirs);
    db_bind_text(s, ":ours", ours);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK || same)
        return rc;
    (*events)++;
    return gpu_event(c, src->id, uuid, "conflict",
                     json_pack("{s:s, s:s, s:s, s:s}", "source", src->name, "field", field,
                               "theirs", theirs, "ours", ours));
}

/* Records which source first set a field the owner left absent. */
static int prov_fill(struct conn *c, int64_t sid, const char *uuid, const char *field,
                     const char *v)
{
    sqlite3_stmt *s;

    if (v == NULL || *v == '\0')
        return GI_OK;
    if (!(s = prep(c, ST_PROV_FILL)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", uuid);
    db_bind_text(s, ":field", field);
    db_bind_text(s, ":value", v);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    return db_exec_done(c, s);
}

/* Binds the GPU's own fields, and the source's team and env defaults for
 * what the report leaves absent, shared by the owner's upsert and another
 * source's fill. */
static void bind_gpu_fields(sqlite3_stmt *s, const struct gi_gpu_obs *g, int64_t host_id,
                            const struct reporter *src)
{
    static const char *const vendors[] = {NULL, "nvidia", "amd"};

    db_bind_opt_text(s, ":parent", g->parent_uuid);
    db_bind_int(s, ":host", host_id);
    db_bind_opt_int(s, ":idx", g->index);
    db_bind_text(s, ":vendor", vendors[g->vendor]);
    db_bind_opt_text(s, ":model", g->name);
    db_bind_opt_text(s, ":serial", g->serial);
    db_bind_opt_text(s, ":bus", g->pci_bus_id);
    db_bind_dbl(s, ":mem", g->memory_total_mib);
    db_bind_opt_text(s, ":driver", g->driver);
    db_bind_opt_text(s, ":vbios", g->vbios);
    db_bind_opt_int(s, ":mig", g->mig_mode);
    db_bind_opt_text(s, ":profile", g->mig_profile);
    db_bind_opt_int(s, ":inst", g->mig_instance);
    db_bind_opt_text(s, ":team", g->team[0] ? g->team : src->defaults[0]);
    db_bind_opt_text(s, ":env", g->env[0] ? g->env : src->defaults[1]);
}

/* A report of a GPU by a source that does not own it: its identity (host,
 * serial, model) is compared, never written over the owner's; it only
 * fills fields the owner left absent. Neither last_seen_at, freshness nor
 * missing_since moves. */
static int ingest_gpu_foreign(struct conn *c, const struct reporter *src,
                              const struct gpu_ident *id, int64_t host_id,
                              const struct gi_host_obs *host, const struct gi_gpu_obs *g,
                              int64_t *events)
{
    sqlite3_stmt *s;
    int rc;

    if ((rc = ident_conflict(c, src, id, g->uuid, "host", host->hostname, id->hostname, events)) !=
            GI_OK ||
        (rc = ident_conflict(c, src, id, g->uuid, "serial", g->serial, id->serial, events)) !=
            GI_OK ||
        (rc = ident_conflict(c, src, id, g->uuid, "model", g->name, id->model, events)) != GI_OK)
        return rc;
    if (!(s = prep(c, ST_GPU_FILL)))
        return GI_INTERNAL;
    db_bind_int(s, ":gid", id->id);
    bind_gpu_fields(s, g, host_id, src);
    db_bind_opt_text(s, ":cluster_set", host->cluster);
    db_bind_opt_text(s, ":cluster", src->defaults[2]);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        return rc;
    if ((rc = prov_fill(c, src->id, g->uuid, "host", id->hostname[0] ? NULL : host->hostname)) ||
        (rc = prov_fill(c, src->id, g->uuid, "model", g->name)) ||
        (rc = prov_fill(c, src->id, g->uuid, "serial", g->serial)) ||
        (rc = prov_fill(c, src->id, g->uuid, "pci_bus_id", g->pci_bus_id)) ||
        (rc = prov_fill(c, src->id, g->uuid, "driver", g->driver)))
        return rc;
    return GI_OK;
}

/* Upserts one GPU with provenance and identity events. The source owns it
 * when nobody does yet, when it already does, or when it outranks the
 * owner by precedence (an `owner_changed` event); otherwise the report
 * goes to ingest_gpu_foreign(). `observed` is when the report's reading
 * was taken, 0 when the caller settles it later (ingest_observed()).
 * *owned tells the caller which way it went. */
static int ingest_gpu(struct conn *c, const struct reporter *src, int64_t host_id,
                      const struct gi_host_obs *host, int64_t observed,
                      const struct gi_gpu_obs *seen, int64_t *events, int64_t *gpu_id,
                      char canon[GI_UUID_LEN], bool *owned)
{
    struct gi_gpu_obs obs = *seen, *g = &obs;
    const char *hostname = host->hostname;
    int64_t sid = src->id;
    struct gpu_ident id;
    sqlite3_stmt *s;
    char num[32];
    int rc, step;

    if ((rc = mig_canonical(c, seen, canon)) != GI_OK)
        return rc;
    gi_strlcpy(obs.uuid, canon, sizeof obs.uuid);
    if ((rc = gpu_ident_load(c, g->uuid, &id)) != GI_OK)
        return rc;
    *owned =
        !(id.known && id.owner != 0 && id.owner != sid && src->precedence <= id.owner_precedence);
    if (!*owned) {
        *gpu_id = id.id;
        return ingest_gpu_foreign(c, src, &id, host_id, host, g, events);
    }
    if (id.known && id.owner != 0 && id.owner != sid) {
        rc = gpu_event(c, sid, g->uuid, "owner_changed",
                       json_pack("{s:s, s:s}", "from", id.owner_name, "to", src->name));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    if (id.known) {
        /* What this source disagreed on as a non-owner is now its own. */
        if (!(s = prep(c, ST_CONFLICT_DEL)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", id.id);
        db_bind_int(s, ":sid", sid);
        db_bind_text(s, ":field", NULL);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }

    if (id.known && id.host_id != 0 && id.host_id != host_id) {
        rc = gpu_event(c, sid, g->uuid, "host_changed",
                       json_pack("{s:s, s:s}", "from_host", id.hostname, "to_host", hostname));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }
    if (g->serial[0]) {
        if (!(s = prep(c, ST_GPU_SERIAL_OTHER)))
            return GI_INTERNAL;
        db_bind_text(s, ":serial", g->serial);
        db_bind_text(s, ":uuid", g->uuid);
        step = sqlite3_step(s);
        if (step == SQLITE_ROW) {
            char other[GI_UUID_LEN];
            gi_strlcpy(other, (const char *)sqlite3_column_text(s, 0), sizeof other);
            sqlite3_reset(s);
            rc = gpu_event(c, sid, g->uuid, "serial_conflict",
                           json_pack("{s:s, s:s}", "serial", g->serial, "other_uuid", other));
            if (rc != GI_OK)
                return rc;
            (*events)++;
        } else {
            sqlite3_reset(s);
            if (step != SQLITE_DONE)
                return db_map_rc(c->db, step);
        }
        if (id.known && id.serial[0] && strcmp(id.serial, g->serial) != 0) {
            rc = gpu_event(c, sid, g->uuid, "serial_changed",
                           json_pack("{s:s, s:s}", "from", id.serial, "to", g->serial));
            if (rc != GI_OK)
                return rc;
            (*events)++;
        }
    }
    if (!id.known) {
        rc = gpu_event(c, sid, g->uuid, "discovered", json_pack("{s:s}", "host", hostname));
        if (rc != GI_OK)
            return rc;
        (*events)++;
    }

    if (!(s = prep(c, ST_GPU_UPSERT)))
        return GI_INTERNAL;
    db_bind_text(s, ":uuid", g->uuid);
    bind_gpu_fields(s, g, host_id, src);
    db_bind_opt_text(s, ":team_set", g->team);
    db_bind_opt_text(s, ":env_set", g->env);
    /* The cluster the host reports about itself wins; the source's
     * default fills only what is absent. */
    db_bind_opt_text(s, ":cluster_set", host->cluster);
    db_bind_opt_text(s, ":cluster", src->defaults[2]);
    db_bind_int(s, ":sid", sid);
    db_bind_int(s, ":now", gi_now());
    if (observed > 0)
        db_bind_int(s, ":obs", observed);
    else
        db_bind_text(s, ":obs", NULL);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW)
        *gpu_id = sqlite3_column_int64(s, 0);
    sqlite3_reset(s);
    if (step != SQLITE_ROW)
        return db_map_rc(c->db, step);

    snprintf(num, sizeof num, "%.0f", g->memory_total_mib);
    if ((rc = prov(c, sid, g->uuid, "host", hostname)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "model", g->name)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "serial", g->serial)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "pci_bus_id", g->pci_bus_id)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "driver", g->driver)) != GI_OK ||
        (rc = prov(c, sid, g->uuid, "memory_total_mib", isnan(g->memory_total_mib) ? NULL : num)))
        return rc;
    return GI_OK;
}

/* A batch GPU's uuid with its row id, sorted for lookup by uuid. */
struct gpu_ref {
    const char *uuid;        /* as the batch names it */
    char canon[GI_UUID_LEN]; /* as it is stored (see mig_canonical) */
    int64_t id;
    const struct gi_sample *newest;
    int64_t anon; /* anonymous processes stored for this GPU in this batch */
    bool owned;   /* the batch's source owns it */
    bool stamped; /* the observation carries its own time */
};

static int ref_cmp(const void *a, const void *b)
{
    return strcmp(((const struct gpu_ref *)a)->uuid, ((const struct gpu_ref *)b)->uuid);
}

/* The stored name of a GPU the batch names `uuid` (itself when unknown). */
static const char *canon_of(struct gpu_ref *refs, size_t nrefs, const char *uuid)
{
    struct gpu_ref key = {.uuid = uuid}, *ref = bsearch(&key, refs, nrefs, sizeof *refs, ref_cmp);
    return ref ? ref->canon : uuid;
}

/* Marks GPUs that this host reported before but not now as missing;
 * only the GPUs this source owns: another source's report never makes a
 * GPU missing. */
static int ingest_missing(struct conn *c, int64_t sid, int64_t host_id, const struct gi_batch *b,
                          const struct gpu_ref *refs, size_t nrefs, int64_t *events)
{
    sqlite3_stmt *s = prep(c, ST_GPU_ON_HOST);
    json_t *gone = json_array();
    size_t i;
    json_t *v;
    int rc = GI_OK, step;

    if (!s) {
        json_decref(gone);
        return GI_INTERNAL;
    }
    db_bind_int(s, ":host", host_id);
    db_bind_int(s, ":sid", sid);
    while ((step = sqlite3_step(s)) == SQLITE_ROW) {
        const char *u = (const char *)sqlite3_column_text(s, 0);
        bool present = false;
        for (size_t k = 0; k < nrefs && !present; k++)
            present = strcmp(refs[k].canon, u) == 0;
        if (!present)
            json_array_append_new(gone, json_string(u));
    }
    sqlite3_reset(s);
    if (step != SQLITE_DONE)
        rc = db_map_rc(c->db, step);
    json_array_foreach(gone, i, v) {
        if (rc != GI_OK)
            break;
        if (!(s = prep(c, ST_GPU_MISSING))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_text(s, ":uuid", json_string_value(v));
        db_bind_int(s, ":now", gi_now());
        if ((rc = db_exec_done(c, s)) == GI_OK)
            rc = gpu_event(c, sid, json_string_value(v), "missing_from_host",
                           json_pack("{s:s}", "batch_id", b->batch_id));
        (*events)++;
    }
    json_decref(gone);
    return rc;
}

/* Inserts samples (kept per source) and moves each GPU's newest values
 * onto its record: the owning source's newest sample; another source's
 * only while the record holds no sample from its owner. The shown sample
 * also advances the GPU's observed_at (never past the arrival time).
 * refs (sorted by uuid) maps the batch's GPUs to their row ids. */
static int ingest_samples(struct conn *c, int64_t sid, const struct gi_batch *b,
                          struct gpu_ref *refs, size_t nrefs, int64_t *stored)
{
    sqlite3_stmt *s;
    int rc;

    /* The hottest insert binds by position, looked up once per batch. */
    static const char *const names[] = {":ts", ":gid",  ":ua",    ":um",    ":mem", ":pw",
                                        ":en", ":temp", ":ecc_c", ":ecc_u", ":xid", ":sid"};
    int ix[12];

    if (!(s = prep(c, ST_SAMPLE_ADD)))
        return GI_INTERNAL;
    for (int k = 0; k < 12; k++)
        ix[k] = sqlite3_bind_parameter_index(s, names[k]);
    for (size_t i = 0; i < b->nsamples; i++) {
        const struct gi_sample *x = &b->samples[i];
        struct gpu_ref key = {.uuid = x->gpu_uuid}, *ref;
        const double d[6] = {x->util_avg,    x->util_max, x->mem_used_mib,
                             x->power_avg_w, x->energy_j, x->temp_c};
        const int64_t n[3] = {x->ecc_corrected, x->ecc_uncorrected, x->xid};
        ref = bsearch(&key, refs, nrefs, sizeof *refs, ref_cmp);
        if (ref == NULL)
            return GI_INVALID; /* the parser guarantees every sample names a batch GPU */
        if (ref->newest == NULL || x->ts >= ref->newest->ts)
            ref->newest = x;
        sqlite3_bind_int64(s, ix[0], x->ts);
        sqlite3_bind_int64(s, ix[1], ref->id);
        for (int k = 0; k < 6; k++) {
            if (isnan(d[k]))
                sqlite3_bind_null(s, ix[2 + k]);
            else
                sqlite3_bind_double(s, ix[2 + k], d[k]);
        }
        for (int k = 0; k < 3; k++) {
            if (n[k] < 0)
                sqlite3_bind_null(s, ix[8 + k]);
            else
                sqlite3_bind_int64(s, ix[8 + k], n[k]);
        }
        sqlite3_bind_int64(s, ix[11], sid);
        rc = sqlite3_step(s);
        sqlite3_reset(s);
        if (rc != SQLITE_DONE)
            return db_map_rc(c->db, rc);
        *stored += sqlite3_changes(c->db);
    }
    /* The newest sample of each GPU in the batch updates its record. */
    for (size_t k = 0; k < nrefs; k++) {
        const struct gi_sample *best = refs[k].newest;
        if (best == NULL)
            continue;
        if (!(s = prep(c, ST_GPU_LATEST)))
            return GI_INTERNAL;
        db_bind_int(s, ":ts", best->ts);
        db_bind_int(s, ":obs", best->ts < gi_now() ? best->ts : gi_now());
        db_bind_int(s, ":sid", sid);
        db_bind_int(s, ":gid", refs[k].id);
        db_bind_dbl(s, ":ua", best->util_avg);
        db_bind_dbl(s, ":mem", best->mem_used_mib);
        db_bind_dbl(s, ":pw", best->power_avg_w);
        db_bind_dbl(s, ":temp", best->temp_c);
        db_bind_opt_int(s, ":ecc_c", best->ecc_corrected);
        db_bind_opt_int(s, ":ecc_u", best->ecc_uncorrected);
        db_bind_opt_int(s, ":xid", best->xid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Freshness of the owned GPUs this batch carries no sample for and no
 * observation time: their reading was taken with the batch's newest
 * sample (now when it has none). A GPU with its own samples was settled
 * by ingest_samples(): its own newest sample, not its neighbours'. */
static int ingest_observed(struct conn *c, const struct gpu_ref *refs, size_t nrefs, int64_t when)
{
    sqlite3_stmt *s;
    int rc;

    for (size_t k = 0; k < nrefs; k++) {
        if (!refs[k].owned || refs[k].newest || refs[k].stamped)
            continue;
        if (!(s = prep(c, ST_GPU_OBSERVED_SET)))
            return GI_INTERNAL;
        db_bind_int(s, ":gid", refs[k].id);
        db_bind_int(s, ":obs", when);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* The time a batch's processes and pods were seen: its newest sample's,
 * or now when it has none. */
static int64_t batch_time(const struct gi_batch *b)
{
    int64_t newest = 0;

    for (size_t i = 0; i < b->nsamples; i++)
        if (b->samples[i].ts > newest)
            newest = b->samples[i].ts;
    return newest ? newest : gi_now();
}

/* Stores the batch's processes. An anonymous process (pid hidden from
 * the reporter, pid < 0) is stored under a synthetic negative pid, -1,
 * -2, … per GPU and batch, so that several of them on one GPU at one
 * time are all kept under the key (ts, gpu_uuid, pid); readers show a
 * negative pid as null. */
static int ingest_procs(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                        size_t nrefs, int64_t *stored)
{
    int64_t newest = batch_time(b), pid;
    sqlite3_stmt *s;
    int rc;

    for (size_t i = 0; i < b->set.nprocs; i++) {
        const struct gi_proc_obs *p = &b->set.procs[i];
        struct gpu_ref key = {.uuid = p->gpu_uuid}, *ref;
        if (!(s = prep(c, ST_PROC_ADD)))
            return GI_INTERNAL;
        pid = p->pid;
        if (pid < 0) {
            ref = bsearch(&key, refs, nrefs, sizeof *refs, ref_cmp);
            pid = ref ? -++ref->anon : -1;
        }
        db_bind_int(s, ":ts", p->ts_ms > 0 ? p->ts_ms / 1000 : newest);
        db_bind_text(s, ":uuid", canon_of(refs, nrefs, p->gpu_uuid));
        db_bind_int(s, ":pid", pid);
        db_bind_opt_text(s, ":name", p->name);
        db_bind_opt_text(s, ":user", p->user);
        db_bind_opt_int(s, ":uid", p->uid);
        db_bind_opt_text(s, ":container", p->container);
        db_bind_opt_text(s, ":pod_uid", p->pod_uid);
        db_bind_opt_text(s, ":pod", p->pod);
        db_bind_opt_text(s, ":ns", p->namespace_);
        db_bind_dbl(s, ":mem", p->used_mib);
        db_bind_int(s, ":sid", sid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
        *stored += sqlite3_changes(c->db);
    }
    return GI_OK;
}

/* Records the pods seen on the batch's GPUs at the newest sample time. */
static int ingest_pods(struct conn *c, int64_t sid, const struct gi_batch *b, struct gpu_ref *refs,
                       size_t nrefs)
{
    int64_t newest = batch_time(b);
    sqlite3_stmt *s;
    int rc;

    for (size_t i = 0; i < b->set.npods; i++) {
        const struct gi_pod_obs *p = &b->set.pods[i];
        if (!(s = prep(c, ST_POD_ADD)))
            return GI_INTERNAL;
        db_bind_int(s, ":ts", newest);
        db_bind_text(s, ":uuid", canon_of(refs, nrefs, p->gpu_uuid));
        db_bind_text(s, ":ns", p->namespace_);
        db_bind_text(s, ":pod", p->pod);
        db_bind_opt_text(s, ":container", p->container);
        db_bind_int(s, ":sid", sid);
        if ((rc = db_exec_done(c, s)) != GI_OK)
            return rc;
    }
    return GI_OK;
}

/* Applies one batch inside the caller's transaction; a batch id already
 * applied for this source is skipped (res->duplicate). */
static int ingest_one(struct conn *c, const struct reporter *src, const struct gi_batch *b,
                      struct store_ingest_result *res)
{
    sqlite3_stmt *s;
    struct gpu_ref *refs = calloc(b->set.ngpus + 1, sizeof *refs);
    int64_t source_id = src->id, host_id = 0, now = gi_now(), newest = batch_time(b);
    const char *const *defaults = src->defaults;
    int rc = GI_INTERNAL;

    memset(res, 0, sizeof *res);
    if (refs == NULL || !(s = prep(c, ST_BATCH_ADD)))
        goto cleanup;
    db_bind_int(s, ":sid", source_id);
    db_bind_text(s, ":bid", b->batch_id);
    db_bind_int(s, ":now", gi_now());
    db_bind_int(s, ":n", (int64_t)b->nsamples);
    rc = db_exec_done(c, s);
    if (rc == GI_CONFLICT) {
        /* Only this statement failed; the transaction goes on. */
        res->duplicate = true;
        rc = GI_OK;
        goto cleanup;
    }
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = ingest_host(c, source_id, src->precedence, &b->host, defaults[2], &host_id)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < b->set.ngpus; i++) {
        /* A GPU observation stamped with its time (a pull) was taken then;
         * the others are settled by ingest_observed(). */
        int64_t ts = b->set.gpus[i].ts_ms / 1000;
        refs[i].uuid = b->set.gpus[i].uuid;
        refs[i].stamped = ts > 0;
        rc = ingest_gpu(c, src, host_id, &b->host, ts < now ? ts : now, &b->set.gpus[i],
                        &res->events, &refs[i].id, refs[i].canon, &refs[i].owned);
        if (rc != GI_OK)
            goto cleanup;
    }
    qsort(refs, b->set.ngpus, sizeof *refs, ref_cmp);
    res->gpus = (int64_t)b->set.ngpus;
    if (!b->partial && b->set.ngpus > 0 &&
        (rc = ingest_missing(c, source_id, host_id, b, refs, b->set.ngpus, &res->events)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_samples(c, source_id, b, refs, b->set.ngpus, &res->samples)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_observed(c, refs, b->set.ngpus, newest < now ? newest : now)) != GI_OK)
        goto cleanup;
    if ((rc = ingest_procs(c, source_id, b, refs, b->set.ngpus, &res->processes)) != GI_OK)
        goto cleanup;
    rc = ingest_pods(c, source_id, b, refs, b->set.ngpus);
cleanup:
    free(refs);
    return rc;
}

/* Applies n batches inside the caller's write transaction on c. */
static int ingest_many_tx(struct conn *c, int64_t source_id, const struct gi_batch *b, size_t n,
                          struct store_ingest_result *res)
{
    sqlite3_stmt *s;
    char team[GI_LABEL_LEN] = "", env[GI_LABEL_LEN] = "", cluster[GI_LABEL_LEN] = "";
    struct reporter src = {.id = source_id, .defaults = {team, env, cluster}};
    int rc, step;

    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SOURCE_DEFAULTS)))
        goto cleanup;
    db_bind_int(s, ":id", source_id);
    step = sqlite3_step(s);
    if (step == SQLITE_ROW) {
        for (int i = 0; i < 3; i++)
            if (sqlite3_column_type(s, i) != SQLITE_NULL)
                gi_strlcpy((char *)src.defaults[i], (const char *)sqlite3_column_text(s, i),
                           GI_LABEL_LEN);
        src.precedence = sqlite3_column_int64(s, 3);
        col_copy(s, 4, src.name, sizeof src.name);
    }
    sqlite3_reset(s);
    rc = GI_OK;
    for (size_t i = 0; i < n && rc == GI_OK; i++) {
        rc = ingest_one(c, &src, &b[i], &res[i]);
        /* What was dropped on the way in is counted on the source. */
        if (rc == GI_OK && !res[i].duplicate && b[i].set.nwarnings > 0) {
            rc = GI_INTERNAL;
            if (!(s = prep(c, ST_SOURCE_WARN)))
                goto cleanup;
            db_bind_int(s, ":n", (int64_t)b[i].set.nwarnings);
            db_bind_text(s, ":msg", b[i].set.warning);
            db_bind_int(s, ":now", gi_now());
            db_bind_int(s, ":id", source_id);
            rc = db_exec_done(c, s);
        }
    }
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SOURCE_OK)))
        goto cleanup;
    db_bind_int(s, ":now", gi_now());
    db_bind_int(s, ":id", source_id);
    rc = db_exec_done(c, s);
cleanup:
    return rc;
}

int store_ingest_many(struct store *st, int64_t source_id, const struct gi_batch *b, size_t n,
                      struct store_ingest_result *res)
{
    struct conn *c = db_conn_get(st);
    int rc = db_tx_begin(c);

    if (rc == GI_OK)
        rc = ingest_many_tx(c, source_id, b, n, res);
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_ingest_as(struct store *st, const char *name, const char *kind, const struct gi_batch *b,
                    size_t n, bool dry_run, struct store_ingest_result *res)
{
    struct conn *c = db_conn_get(st);
    int64_t sid = 0;
    int rc = db_tx_begin(c);

    if (rc == GI_OK)
        rc = source_ensure(c, name, kind, NULL, NULL, NULL, &sid);
    if (rc == GI_OK)
        rc = ingest_many_tx(c, sid, b, n, res);
    /* A rehearsal runs every statement and constraint, then undoes them
     * (db_tx_end rolls back for any status but GI_OK). */
    if (rc == GI_OK && dry_run)
        db_tx_end(c, GI_CONFLICT);
    else
        rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

int store_ingest(struct store *st, int64_t source_id, const struct gi_batch *b,
                 struct store_ingest_result *res)
{
    return store_ingest_many(st, source_id, b, 1, res);
}

static void bind_gpu_filter(sqlite3_stmt *s, const void *filter)
{
    const struct store_gpu_filter *f = filter;
    db_bind_text(s, ":host", f->host);
    db_bind_text(s, ":cluster", f->cluster);
    db_bind_text(s, ":model", f->model);
    db_bind_int(s, ":dc", f->datacenter_id);
    db_bind_int(s, ":sid", f->source_id);
    db_bind_int(s, ":stale_f", f->stale);
    db_bind_int(s, ":stale", f->stale_before);
    db_bind_like(s, ":q", f->q);
    db_bind_text(s, ":gstate", f->state);
    db_bind_text(s, ":team", f->team);
    db_bind_text(s, ":env", f->env);
}

int store_gpu_list(struct store *st, const struct store_gpu_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    return store_gpu_list_summary(st, f, pg, items, total, NULL);
}

int store_gpu_list_summary(struct store *st, const struct store_gpu_filter *f,
                           const struct store_page *pg, json_t **items, int64_t *total,
                           json_t **summary)
{
    enum stmt_id list = !pg->sort ? ST_GPU_LIST : pg->desc ? ST_GPU_LIST_DESC : ST_GPU_LIST_ASC;
    struct conn *c;
    sqlite3_stmt *s;
    json_t *sum = NULL;
    int rc = GI_INTERNAL;

    if (summary == NULL)
        return list_page(st, ST_GPU_COUNT, list, bind_gpu_filter, f, pg, items, total);
    *summary = NULL;
    c = db_conn_get(st);
    db_read_begin(c);
    if (!(s = prep(c, ST_GPU_SUMMARY)))
        goto cleanup;
    bind_gpu_filter(s, f);
    if ((rc = db_fetch_one(c, s, &sum)) != GI_OK)
        goto cleanup;
    *total = json_integer_value(json_object_get(sum, "total"));
    rc = GI_INTERNAL;
    if (!(s = prep(c, list)))
        goto cleanup;
    bind_gpu_filter(s, f);
    db_bind_page(s, pg);
    if ((rc = db_collect(c, s, items)) != GI_OK)
        goto cleanup;
    *summary = sum;
    sum = NULL;
cleanup:
    db_read_end(c);
    json_decref(sum);
    db_conn_put(st, c);
    return rc;
}

int store_gpu_get(struct store *st, const char *uuid, int64_t stale_before, json_t **out)
{
    static const struct {
        enum stmt_id id;
        const char *key;
    } parts[] = {{ST_GPU_PROV, "provenance"},    {ST_GPU_PROCS, "processes"},
                 {ST_GPU_PODS, "pods"},          {ST_GPU_NODE_PODS, "node_pods"},
                 {ST_GPU_EVENTS, "events"},      {ST_GPU_CHILDREN, "mig_instances"},
                 {ST_GPU_CONFLICTS, "conflicts"}};
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *g = NULL, *arr;
    int rc = GI_INTERNAL;

    *out = NULL;
    db_read_begin(c);
    if (!(s = prep(c, ST_GPU_GET)))
        goto cleanup;
    db_bind_text(s, ":uuid", uuid);
    db_bind_int(s, ":stale", stale_before);
    if ((rc = db_fetch_one(c, s, &g)) != GI_OK)
        goto cleanup;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        rc = GI_INTERNAL;
        if (!(s = prep(c, parts[i].id)))
            goto cleanup;
        db_bind_text(s, ":uuid", uuid);
        if ((rc = db_collect(c, s, &arr)) != GI_OK)
            goto cleanup;
        json_object_set_new(g, parts[i].key, arr);
    }
    if ((rc = links_gpu_resource(c, uuid, &arr)) != GI_OK)
        goto cleanup;
    json_object_set_new(g, "resource", arr);
    *out = g;
    g = NULL;
cleanup:
    db_read_end(c);
    json_decref(g);
    db_conn_put(st, c);
    return rc;
}

int store_source_list(struct store *st, int64_t stale_before, json_t **items)
{
    return collect_with(st, ST_SOURCE_LIST, ":stale", stale_before, items);
}

static int src_get(struct conn *c, int64_t id, int64_t stale_before, json_t **out)
{
    sqlite3_stmt *s = prep(c, ST_SRC_GET);
    if (!s)
        return GI_INTERNAL;
    db_bind_int(s, ":id", id);
    db_bind_int(s, ":stale", stale_before);
    return db_fetch_one(c, s, out);
}

/* Audit rows for sources never carry their config (it may hold secrets). */
static json_t *src_audit_view(const json_t *src)
{
    json_t *v = src ? json_deep_copy(src) : NULL;
    if (v)
        json_object_del(v, "config");
    return v;
}

int store_source_create(struct store *st, const char *actor, const struct store_source *in,
                        json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *view = NULL;
    int64_t id;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SRC_ADD)))
        goto cleanup;
    db_bind_text(s, ":name", in->name);
    db_bind_text(s, ":kind", in->kind);
    db_bind_json(s, ":config", in->config);
    db_bind_opt_text(s, ":team", in->team);
    db_bind_opt_text(s, ":env", in->env);
    db_bind_opt_text(s, ":cluster", in->cluster);
    db_bind_int(s, ":interval", in->interval_s < 0 ? 300 : in->interval_s);
    db_bind_int(s, ":enabled", in->enabled < 0 ? 1 : in->enabled);
    db_bind_int(s, ":prec", in->has_precedence ? in->precedence : 0);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    id = sqlite3_last_insert_rowid(c->db);
    if ((rc = src_get(c, id, 0, out)) != GI_OK)
        goto cleanup;
    view = src_audit_view(*out);
    rc = db_audit(c, actor, "create", "source", id, NULL, view);
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(view);
    db_conn_put(st, c);
    return rc;
}

int store_source_get(struct store *st, int64_t id, int64_t stale_before, json_t **out)
{
    struct conn *c = db_conn_get(st);
    int rc = src_get(c, id, stale_before, out);
    db_conn_put(st, c);
    return rc;
}

int store_source_update(struct store *st, const char *actor, int64_t id,
                        const struct store_source *in, json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL, *bv = NULL, *av = NULL;
    int rc = db_tx_begin(c);

    *out = NULL;
    if (rc != GI_OK)
        goto cleanup;
    if ((rc = src_get(c, id, 0, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SRC_UPDATE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    db_bind_text(s, ":name", in->name);
    db_bind_json(s, ":config", in->config);
    db_bind_text(s, ":team", in->team);
    db_bind_text(s, ":env", in->env);
    db_bind_text(s, ":cluster", in->cluster);
    db_bind_int(s, ":interval", in->interval_s);
    db_bind_int(s, ":enabled", in->enabled);
    db_bind_int(s, ":has_prec", in->has_precedence ? 1 : 0);
    db_bind_int(s, ":prec", in->precedence);
    db_bind_int(s, ":now", gi_now());
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    if ((rc = src_get(c, id, 0, out)) != GI_OK)
        goto cleanup;
    bv = src_audit_view(before);
    av = src_audit_view(*out);
    rc = db_audit(c, actor, "update", "source", id, bv, av);
cleanup:
    rc = db_tx_end(c, rc);
    if (rc != GI_OK && *out) {
        json_decref(*out);
        *out = NULL;
    }
    json_decref(before);
    json_decref(bv);
    json_decref(av);
    db_conn_put(st, c);
    return rc;
}

int store_source_delete(struct store *st, const char *actor, int64_t id)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *before = NULL, *bv = NULL;
    int rc = db_tx_begin(c);

    if (rc != GI_OK)
        goto cleanup;
    if ((rc = src_get(c, id, 0, &before)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SRC_DELETE)))
        goto cleanup;
    db_bind_int(s, ":id", id);
    if ((rc = db_exec_done(c, s)) != GI_OK)
        goto cleanup;
    bv = src_audit_view(before);
    rc = db_audit(c, actor, "delete", "source", id, bv, NULL);
cleanup:
    rc = db_tx_end(c, rc);
    json_decref(before);
    json_decref(bv);
    db_conn_put(st, c);
    return rc;
}

int store_source_due(struct store *st, int64_t now, json_t **items)
{
    return collect_with(st, ST_SRC_DUE, ":now", now, items);
}

int store_source_record(struct store *st, int64_t id, const char *error, int64_t gpus)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_SRC_RECORD);
    int rc = GI_INTERNAL;

    if (s) {
        db_bind_int(s, ":id", id);
        db_bind_text(s, ":err", error);
        db_bind_int(s, ":n", gpus);
        db_bind_int(s, ":now", gi_now());
        rc = db_exec_done(c, s);
    }
    db_conn_put(st, c);
    return rc;
}

int store_metrics(struct store *st, int64_t stale_before, json_t **out)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    json_t *gpus = NULL, *sources = NULL;
    int rc = GI_INTERNAL;

    *out = NULL;
    db_read_begin(c);
    if (!(s = prep(c, ST_METRICS_GPUS)))
        goto cleanup;
    db_bind_int(s, ":stale", stale_before);
    if ((rc = db_fetch_one(c, s, &gpus)) != GI_OK)
        goto cleanup;
    rc = GI_INTERNAL;
    if (!(s = prep(c, ST_SOURCE_LIST)))
        goto cleanup;
    db_bind_int(s, ":stale", stale_before);
    if ((rc = db_collect(c, s, &sources)) != GI_OK)
        goto cleanup;
    *out = json_pack("{s:o, s:o}", "gpus", gpus, "sources", sources);
    gpus = sources = NULL;
    rc = *out ? GI_OK : GI_INTERNAL;
cleanup:
    db_read_end(c);
    json_decref(gpus);
    json_decref(sources);
    db_conn_put(st, c);
    return rc;
}

int store_k8s_sync(struct store *st, int64_t source_id, const char *cluster,
                   const struct store_k8s_node *nodes, size_t nn, const struct store_k8s_pod *pods,
                   size_t np)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s;
    int64_t now = gi_now();
    int rc = db_tx_begin(c);

    /* Whatever this listing does not mark again is gone. */
    for (int k = 0; rc == GI_OK && k < 2; k++) {
        if (!(s = prep(c, k ? ST_K8S_UNSEE_PODS : ST_K8S_UNSEE_NODES))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        rc = db_exec_done(c, s);
    }
    for (size_t i = 0; rc == GI_OK && i < nn; i++) {
        const struct store_k8s_node *n = &nodes[i];
        if (!(s = prep(c, ST_K8S_NODE_UPSERT))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        db_bind_text(s, ":name", n->name);
        db_bind_opt_text(s, ":cluster", cluster);
        db_bind_opt_text(s, ":hostname", n->hostname);
        db_bind_opt_text(s, ":product", n->product);
        db_bind_opt_int(s, ":phys", n->physical_gpus);
        db_bind_opt_int(s, ":cap", n->capacity);
        db_bind_opt_int(s, ":alloc", n->allocatable);
        db_bind_opt_int(s, ":mig", n->mig_devices);
        db_bind_opt_text(s, ":sharing", n->sharing);
        db_bind_opt_int(s, ":replicas", n->replicas);
        db_bind_opt_text(s, ":driver", n->driver);
        db_bind_opt_text(s, ":cloud", n->cloud);
        db_bind_opt_text(s, ":region", n->region);
        db_bind_opt_text(s, ":zone", n->zone);
        db_bind_opt_text(s, ":itype", n->instance_type);
        db_bind_opt_int(s, ":ready", n->ready);
        db_bind_opt_text(s, ":warning", n->warning);
        db_bind_int(s, ":now", now);
        rc = db_exec_done(c, s);
        if (rc == GI_OK && cluster && *cluster) {
            for (int k = 0; rc == GI_OK && k < 2; k++) {
                if (!(s = prep(c, k ? ST_K8S_GPU_CLUSTER : ST_K8S_HOST_CLUSTER))) {
                    rc = GI_INTERNAL;
                    break;
                }
                db_bind_text(s, ":cluster", cluster);
                db_bind_text(s, ":name", n->name);
                db_bind_text(s, ":hostname", n->hostname ? n->hostname : n->name);
                rc = db_exec_done(c, s);
            }
        }
    }
    for (size_t i = 0; rc == GI_OK && i < np; i++) {
        const struct store_k8s_pod *p = &pods[i];
        bool done =
            p->phase && (strcmp(p->phase, "Succeeded") == 0 || strcmp(p->phase, "Failed") == 0);
        if (!(s = prep(c, ST_K8S_POD_UPSERT))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        db_bind_text(s, ":uid", p->uid);
        db_bind_text(s, ":ns", p->ns);
        db_bind_text(s, ":name", p->name);
        db_bind_opt_text(s, ":node", p->node);
        db_bind_opt_text(s, ":phase", p->phase);
        db_bind_int(s, ":gpus", p->gpus < 0 ? 0 : p->gpus);
        db_bind_int(s, ":mig", p->mig_devices < 0 ? 0 : p->mig_devices);
        db_bind_opt_text(s, ":okind", p->owner_kind);
        db_bind_opt_text(s, ":oname", p->owner_name);
        if (p->labels)
            db_bind_json(s, ":labels", p->labels);
        else
            db_bind_text(s, ":labels", "{}");
        db_bind_opt_int(s, ":started", p->started_at);
        db_bind_int(s, ":now", now);
        if (done)
            db_bind_int(s, ":ended", now);
        else
            db_bind_text(s, ":ended", NULL);
        rc = db_exec_done(c, s);
    }
    for (int k = 0; rc == GI_OK && k < 2; k++) {
        if (!(s = prep(c, k ? ST_K8S_POD_GONE : ST_K8S_NODE_GONE))) {
            rc = GI_INTERNAL;
            break;
        }
        db_bind_int(s, ":sid", source_id);
        db_bind_int(s, ":now", now);
        rc = db_exec_done(c, s);
    }
    rc = db_tx_end(c, rc);
    db_conn_put(st, c);
    return rc;
}

static void bind_k8s_filter(sqlite3_stmt *s, const void *filter)
{
    const struct store_k8s_filter *f = filter;
    db_bind_text(s, ":cluster", f->cluster);
    db_bind_text(s, ":node", f->node);
    db_bind_text(s, ":ns", f->ns);
    db_bind_int(s, ":active", f->active);
}

int store_k8s_nodes(struct store *st, const struct store_k8s_filter *f, json_t **items)
{
    struct conn *c = db_conn_get(st);
    sqlite3_stmt *s = prep(c, ST_K8S_NODES);
    int rc = GI_INTERNAL;

    if (s) {
        bind_k8s_filter(s, f);
        rc = db_collect(c, s, items);
    }
    db_conn_put(st, c);
    return rc;
}

int store_k8s_pods(struct store *st, const struct store_k8s_filter *f, const struct store_page *pg,
                   json_t **items, int64_t *total)
{
    return list_page(st, ST_K8S_PODS_COUNT, ST_K8S_PODS, bind_k8s_filter, f, pg, items, total);
}
