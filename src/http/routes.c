/* The route table: every path the server answers, in one place, with the
 * query parameters each handler reads (see routes.h). */
#include "http/routes.h"
#include "api/api.h"

#include <string.h>

/* Parameters shared by routes that answer a list: the list envelope (or
 * CSV with format=csv), and for paged lists the page and sort. */
#define LIST "format"
#define PAGED LIST ",limit,cursor,sort"
/* CSV imports: a dry run reports without writing. */
#define IMPORT "dry_run"
/* The filters of every usage question (as /api/v1/usage takes them). */
#define USAGE_FILTERS LIST ",team,env,pool,cluster,cloud,datacenter,model,from,to"

const struct route gi_routes[] = {
    {"GET", "/healthz", api_healthz, GI_ROLE_NONE, ""},
    {"GET", "/readyz", api_readyz, GI_ROLE_NONE, ""},
    {"GET", "/metrics", api_metrics, GI_ROLE_VIEWER, ""},

    {"POST", "/api/v1/session", api_session_create, GI_ROLE_NONE, ""},
    {"GET", "/api/v1/session", api_session_get, GI_ROLE_VIEWER, ""},
    {"DELETE", "/api/v1/session", api_session_delete, GI_ROLE_VIEWER, ""},

    {"GET", "/api/v1/kinds", api_kinds, GI_ROLE_VIEWER, ""},
    {"GET", "/api/v1/openapi.json", api_openapi, GI_ROLE_NONE, ""},

    {"GET", "/api/v1/tokens", api_tokens_list, GI_ROLE_ADMIN, LIST},
    {"POST", "/api/v1/tokens", api_tokens_create, GI_ROLE_ADMIN, ""},
    {"PATCH", "/api/v1/tokens/{id}", api_tokens_update, GI_ROLE_ADMIN, ""},
    {"DELETE", "/api/v1/tokens/{id}", api_tokens_revoke, GI_ROLE_ADMIN, ""},

    {"GET", "/api/v1/audit", api_audit_list, GI_ROLE_VIEWER, PAGED ",entity,entity_id,actor"},

    {"GET", "/api/v1/datacenters", api_datacenters_list, GI_ROLE_VIEWER, PAGED ",q"},
    {"POST", "/api/v1/datacenters", api_datacenters_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/datacenters/{id}", api_datacenters_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/datacenters/{id}", api_datacenters_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/datacenters/{id}", api_datacenters_delete, GI_ROLE_EDITOR, "force"},
    {"GET", "/api/v1/datacenters/{id}/overview", api_datacenters_overview, GI_ROLE_VIEWER, ""},

    {"GET", "/api/v1/resources", api_resources_list, GI_ROLE_VIEWER,
     PAGED ",datacenter,kind,state,tenant,project,q"},
    {"POST", "/api/v1/resources", api_resources_create, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/resources/import", api_resources_import, GI_ROLE_EDITOR, IMPORT},
    {"GET", "/api/v1/resources/{id}", api_resources_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/resources/{id}", api_resources_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/resources/{id}", api_resources_delete, GI_ROLE_EDITOR, "force"},
    {"POST", "/api/v1/resources/{id}/allocate", api_resources_allocate, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/resources/{id}/release", api_resources_release, GI_ROLE_EDITOR, ""},

    {"POST", "/api/v1/allocations", api_allocations_create, GI_ROLE_EDITOR, ""},

    /* Ownership. The owner routes come before /gpus/{key*}, which would
     * take their paths for a GPU's UUID. */
    {"GET", "/api/v1/teams", api_dims_list, GI_ROLE_VIEWER, PAGED ",q"},
    {"POST", "/api/v1/teams", api_dims_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/teams/{key}", api_dims_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/teams/{key}", api_dims_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/teams/{key}", api_dims_delete, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/environments", api_dims_list, GI_ROLE_VIEWER, PAGED ",q"},
    {"POST", "/api/v1/environments", api_dims_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/environments/{key}", api_dims_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/environments/{key}", api_dims_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/environments/{key}", api_dims_delete, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/pools", api_dims_list, GI_ROLE_VIEWER, PAGED ",q"},
    {"POST", "/api/v1/pools", api_dims_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/pools/{key}", api_dims_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/pools/{key}", api_dims_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/pools/{key}", api_dims_delete, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/clusters", api_dims_list, GI_ROLE_VIEWER, PAGED ",q"},
    {"POST", "/api/v1/clusters", api_dims_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/clusters/{key}", api_dims_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/clusters/{key}", api_dims_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/clusters/{key}", api_dims_delete, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/gpus/{key}/owner", api_owner_get, GI_ROLE_VIEWER, "at"},
    {"PUT", "/api/v1/gpus/{key}/owner", api_owner_put, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/hosts/{key}/owner", api_owner_get, GI_ROLE_VIEWER, ""},
    {"PUT", "/api/v1/hosts/{key}/owner", api_owner_put, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/resources/{id}/owner", api_owner_get, GI_ROLE_VIEWER, ""},
    {"PUT", "/api/v1/resources/{id}/owner", api_owner_put, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/ownership-rules", api_rules_list, GI_ROLE_VIEWER, LIST},
    {"POST", "/api/v1/ownership-rules", api_rules_create, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/ownership-rules/dry-run", api_rules_dry_run, GI_ROLE_VIEWER, ""},
    {"GET", "/api/v1/ownership-rules/{id}", api_rules_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/ownership-rules/{id}", api_rules_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/ownership-rules/{id}", api_rules_delete, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/ownership/unowned", api_owner_unowned, GI_ROLE_VIEWER, PAGED},
    {"POST", "/api/v1/ownership/import", api_owner_import, GI_ROLE_EDITOR, IMPORT},

    {"POST", "/api/v1/ingest", api_ingest, GI_ROLE_PUSHER, ""},
    /* FusionInventory / GLPI agents post to the server URL they are given,
     * with or without a final slash, and authenticate with HTTP Basic. */
    {"POST", "/glpi", api_glpi, GI_ROLE_PUSHER, ""},
    {"POST", "/glpi/", api_glpi, GI_ROLE_PUSHER, ""},
    {"GET", "/api/v1/gpus", api_gpus_list, GI_ROLE_VIEWER,
     PAGED ",host,cluster,model,q,datacenter,source,stale,state,team,env"},
    {"POST", "/api/v1/gpus/import", api_gpus_import, GI_ROLE_EDITOR, IMPORT ",source,map.*"},
    {"GET", "/api/v1/gpus/{key}/timeline", api_gpu_timeline, GI_ROLE_VIEWER, "from,to"},
    {"GET", "/api/v1/gpus/{key*}", api_gpus_get, GI_ROLE_VIEWER, ""},
    {"GET", "/api/v1/sources", api_sources_list, GI_ROLE_VIEWER, LIST},
    {"POST", "/api/v1/sources", api_sources_create, GI_ROLE_ADMIN, ""},
    {"GET", "/api/v1/source-kinds", api_source_kinds, GI_ROLE_VIEWER, ""},
    {"POST", "/api/v1/sources/test", api_sources_test, GI_ROLE_ADMIN, "deadline_s"},
    {"GET", "/api/v1/sources/{id}", api_sources_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/sources/{id}", api_sources_update, GI_ROLE_ADMIN, ""},
    {"DELETE", "/api/v1/sources/{id}", api_sources_delete, GI_ROLE_ADMIN, ""},
    {"POST", "/api/v1/sources/{id}/run", api_sources_run, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/sources/{id}/test", api_sources_test_saved, GI_ROLE_ADMIN, "deadline_s"},

    {"GET", "/api/v1/hosts", api_hosts_list, GI_ROLE_VIEWER, PAGED ",datacenter,linked,q"},
    {"GET", "/api/v1/hosts/{id}", api_hosts_get, GI_ROLE_VIEWER, ""},
    {"PUT", "/api/v1/hosts/{id}/link", api_hosts_link_put, GI_ROLE_ADMIN, ""},
    {"DELETE", "/api/v1/hosts/{id}/link", api_hosts_link_delete, GI_ROLE_ADMIN, ""},
    {"POST", "/api/v1/hosts/{id}/link/auto", api_hosts_link_auto, GI_ROLE_ADMIN, ""},
    {"GET", "/api/v1/drift", api_drift_list, GI_ROLE_VIEWER, PAGED ",kind,datacenter"},

    {"GET", "/api/v1/kubernetes/nodes", api_k8s_nodes, GI_ROLE_VIEWER,
     LIST ",cluster,node,namespace,active"},
    {"GET", "/api/v1/kubernetes/pods", api_k8s_pods, GI_ROLE_VIEWER,
     PAGED ",cluster,node,namespace,active"},
    {"GET", "/api/v1/slurm/jobs", api_slurm_jobs, GI_ROLE_VIEWER,
     PAGED ",cluster,user,account,state,from,to"},
    {"GET", "/api/v1/cloud/instances", api_cloud_instances, GI_ROLE_VIEWER,
     PAGED ",provider,state,account,region,q"},

    {"GET", "/api/v1/usage", api_usage_get, GI_ROLE_VIEWER,
     LIST ",group_by,from,to,step,team,env,pool,cluster,cloud,datacenter,model,limit,offset"},
    {"POST", "/api/v1/usage/rollup", api_usage_rollup, GI_ROLE_ADMIN, ""},
    {"GET", "/api/v1/webhooks", api_webhooks_list, GI_ROLE_ADMIN, PAGED},
    {"POST", "/api/v1/webhooks", api_webhooks_create, GI_ROLE_ADMIN, ""},
    {"GET", "/api/v1/webhooks/{id}", api_webhooks_get, GI_ROLE_ADMIN, ""},
    {"PATCH", "/api/v1/webhooks/{id}", api_webhooks_update, GI_ROLE_ADMIN, ""},
    {"DELETE", "/api/v1/webhooks/{id}", api_webhooks_delete, GI_ROLE_ADMIN, ""},
    {"POST", "/api/v1/webhooks/{id}/test", api_webhooks_test, GI_ROLE_ADMIN, ""},
    {"GET", "/api/v1/webhooks/{id}/deliveries", api_webhooks_deliveries, GI_ROLE_VIEWER, PAGED},
    {"POST", "/api/v1/webhook-deliveries/{id}/retry", api_webhook_deliveries_retry, GI_ROLE_ADMIN,
     ""},

    /* Lifecycle rules. /lifecycle-rules/dry-run comes before /{id}. */
    {"GET", "/api/v1/lifecycle-rules", api_lrules_list, GI_ROLE_VIEWER, LIST},
    {"POST", "/api/v1/lifecycle-rules", api_lrules_create, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/lifecycle-rules/dry-run", api_lrules_dry_run_body, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/lifecycle-rules/evaluate", api_lrules_evaluate, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/lifecycle-rules/{id}", api_lrules_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/lifecycle-rules/{id}", api_lrules_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/lifecycle-rules/{id}", api_lrules_delete, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/lifecycle-rules/{id}/dry-run", api_lrules_dry_run, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/lifecycle-rules/{id}/run", api_lrules_run, GI_ROLE_EDITOR, ""},

    {"GET", "/api/v1/tickets", api_tickets_list, GI_ROLE_VIEWER, PAGED ",state,asset,datacenter"},
    {"POST", "/api/v1/tickets", api_tickets_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/tickets/{id}", api_tickets_get, GI_ROLE_VIEWER, ""},
    {"POST", "/api/v1/tickets/{id}/close", api_tickets_close, GI_ROLE_EDITOR, ""},

    {"GET", "/api/v1/prices", api_prices_list, GI_ROLE_VIEWER, PAGED ",kind,model"},
    {"POST", "/api/v1/prices", api_prices_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/prices/rate", api_prices_rate, GI_ROLE_VIEWER, "kind,model,env,cloud,pool,at"},
    {"GET", "/api/v1/prices/{id}", api_prices_get, GI_ROLE_VIEWER, ""},
    {"PATCH", "/api/v1/prices/{id}", api_prices_update, GI_ROLE_EDITOR, ""},
    {"DELETE", "/api/v1/prices/{id}", api_prices_delete, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/billing/import", api_billing_import, GI_ROLE_EDITOR, IMPORT ",format"},
    {"GET", "/api/v1/billing/unmatched", api_billing_unmatched, GI_ROLE_VIEWER, PAGED},
    {"GET", "/api/v1/cost-settings", api_cost_settings_get, GI_ROLE_VIEWER, ""},
    {"PUT", "/api/v1/cost-settings", api_cost_settings_put, GI_ROLE_ADMIN, ""},
    {"GET", "/api/v1/reports/showback", api_showback, GI_ROLE_VIEWER, "datacenter,format,month"},

    {"GET", "/api/v1/usage/heatmap", api_usage_heatmap, GI_ROLE_VIEWER, USAGE_FILTERS ",metric,tz"},
    {"GET", "/api/v1/usage/trend", api_usage_trend, GI_ROLE_VIEWER,
     USAGE_FILTERS ",limit,period,group_by"},
    {"GET", "/api/v1/insights/idle", api_insights_idle, GI_ROLE_VIEWER,
     USAGE_FILTERS ",limit,min_hours"},
    {"GET", "/api/v1/insights/allocated-idle", api_insights_alloc_idle, GI_ROLE_VIEWER,
     USAGE_FILTERS ",limit"},
    {"GET", "/api/v1/insights/waste-by-team", api_insights_waste_by_team, GI_ROLE_VIEWER,
     USAGE_FILTERS ",limit"},
    {"GET", "/api/v1/insights/top-consumers", api_insights_top_consumers, GI_ROLE_VIEWER,
     USAGE_FILTERS ",limit"},
    {"GET", "/api/v1/insights/overrequest", api_insights_overrequest, GI_ROLE_VIEWER,
     USAGE_FILTERS ",limit,peak_below"},
    {"GET", "/api/v1/insights/savings", api_insights_savings, GI_ROLE_VIEWER,
     USAGE_FILTERS ",limit,min_hours,peak_below"},

    /* Hardware assets. /assets/import comes before /assets/{key}. */
    {"GET", "/api/v1/assets", api_assets_list, GI_ROLE_VIEWER,
     PAGED ",kind,stage,datacenter,model,warranty_before,warranty_after,ends_after,ends_before,q,"
           "parent"},
    {"POST", "/api/v1/assets", api_assets_create, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/assets/import", api_assets_import, GI_ROLE_EDITOR, IMPORT},
    {"GET", "/api/v1/assets/labels.svg", api_assets_labels, GI_ROLE_VIEWER,
     "paper,tags,kind,stage,datacenter,model,warranty_before,q,parent"},
    {"GET", "/api/v1/assets/{key}/label.svg", api_assets_label, GI_ROLE_VIEWER, ""},
    {"GET", "/api/v1/assets/{key}", api_assets_get, GI_ROLE_VIEWER, "from,to"},
    {"PATCH", "/api/v1/assets/{key}", api_assets_update, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/assets/{key}/stage", api_assets_stage, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/assets/{key}/events", api_assets_events, GI_ROLE_VIEWER, PAGED},
    {"GET", "/api/v1/assets/{key}/conflicts", api_assets_conflicts, GI_ROLE_VIEWER, PAGED ",state"},
    {"GET", "/api/v1/reservations", api_reservations_list, GI_ROLE_VIEWER,
     PAGED ",datacenter,model,state,asset"},
    {"POST", "/api/v1/reservations/{id}/release", api_reservations_release, GI_ROLE_EDITOR, ""},
    {"PATCH", "/api/v1/reservations/{id}", api_reservations_update, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/sync-conflicts", api_sync_conflicts_list, GI_ROLE_VIEWER,
     PAGED ",state,asset"},
    {"POST", "/api/v1/sync-conflicts/{id}/resolve", api_sync_conflicts_resolve, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/sync-pushes", api_sync_pushes_list, GI_ROLE_VIEWER, PAGED ",asset"},
    {"GET", "/api/v1/asset-events", api_asset_events_export, GI_ROLE_VIEWER,
     PAGED ",from,to,kind,asset_kind,datacenter"},
    {"GET", "/api/v1/asset-stages", api_asset_stage_counts, GI_ROLE_VIEWER,
     "kind,datacenter,model,warranty_before,warranty_after,ends_after,ends_before,q,parent"},
    {"POST", "/api/v1/scans", api_scans_create, GI_ROLE_EDITOR, ""},
    /* The scan URL of a label: a redirect into the dashboard. */
    {"GET", "/scan/{key}", api_scan_page, GI_ROLE_NONE, ""},
    {"GET", "/api/v1/audits", api_audits_list, GI_ROLE_VIEWER, PAGED ",state"},
    {"POST", "/api/v1/audits", api_audits_create, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/audits/{id}", api_audits_get, GI_ROLE_VIEWER, ""},
    {"POST", "/api/v1/audits/{id}/scans", api_audits_scan, GI_ROLE_EDITOR, ""},
    {"POST", "/api/v1/audits/{id}/close", api_audits_close, GI_ROLE_EDITOR, ""},
    {"GET", "/api/v1/assets/{key}/health", api_assets_health, GI_ROLE_VIEWER, ""},

    {NULL, NULL, NULL, GI_ROLE_NONE, NULL},
};

bool route_basic_auth(const struct route *rt) { return rt && rt->handler == api_glpi; }

bool route_param_known(const struct route *rt, const char *name)
{
    size_t nl = strlen(name);

    for (const char *p = rt->params; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len > 0 && p[len - 1] == '*') {
            if (nl >= len - 1 && strncmp(p, name, len - 1) == 0)
                return true;
        } else if (len == nl && strncmp(p, name, len) == 0) {
            return true;
        }
        p = e ? e + 1 : p + len;
    }
    return false;
}
