/* Every API handler; one file per resource family. Handlers share one
 * signature and are wired to paths only in src/http/routes.c. */
#ifndef GI_API_H
#define GI_API_H

#include "http/request.h"

/* health.c */
void api_healthz(struct req *r);
void api_readyz(struct req *r);
void api_kinds(struct req *r);

/* session.c: dashboard sign-in */
void api_session_create(struct req *r);
void api_session_get(struct req *r);
void api_session_delete(struct req *r);

/* tokens.c */
void api_tokens_list(struct req *r);
void api_tokens_create(struct req *r);
void api_tokens_revoke(struct req *r);
void api_tokens_update(struct req *r);

/* audit.c */
void api_audit_list(struct req *r);

/* datacenters.c */
void api_datacenters_list(struct req *r);
void api_datacenters_create(struct req *r);
void api_datacenters_get(struct req *r);
void api_datacenters_update(struct req *r);
void api_datacenters_delete(struct req *r);
void api_datacenters_overview(struct req *r);

/* resources.c */
void api_resources_list(struct req *r);
void api_resources_create(struct req *r);
void api_resources_get(struct req *r);
void api_resources_update(struct req *r);
void api_resources_delete(struct req *r);
void api_resources_allocate(struct req *r);
void api_resources_release(struct req *r);

/* allocations.c */
void api_allocations_create(struct req *r);

/* ingest.c: the push API */
void api_ingest(struct req *r);

/* glpi.c: FusionInventory / GLPI agents (HTTP Basic, see routes.h) */
void api_glpi(struct req *r);

/* gpus.c */
void api_gpus_list(struct req *r);
void api_gpus_get(struct req *r);

/* gpu_import.c */
void api_gpus_import(struct req *r);

/* sources.c */
void api_sources_list(struct req *r);
void api_sources_create(struct req *r);
void api_sources_get(struct req *r);
void api_sources_update(struct req *r);
void api_sources_delete(struct req *r);
void api_sources_run(struct req *r);
/* A dry pull (nothing stored): of a source body, or of a saved source
 * with an optional change, its secrets kept. */
void api_sources_test(struct req *r);
void api_sources_test_saved(struct req *r);
/* source_kinds.c */
void api_source_kinds(struct req *r);

/* openapi.c: the API description (src/api/openapi.json) */
void api_openapi(struct req *r);

/* kubernetes.c */
void api_k8s_nodes(struct req *r);
void api_k8s_pods(struct req *r);
void api_slurm_jobs(struct req *r);
void api_cloud_instances(struct req *r);

/* hosts.c: discovered hosts and their inventory links */
void api_hosts_list(struct req *r);
void api_hosts_get(struct req *r);
void api_hosts_link_put(struct req *r);
void api_hosts_link_delete(struct req *r);
void api_hosts_link_auto(struct req *r);

/* drift.c */
void api_drift_list(struct req *r);

/* ownership.c: dimensions (one code path for /teams, /environments,
 * /pools, /clusters), owner assignments, mapping rules, unowned GPUs */
void api_dims_list(struct req *r);
void api_dims_create(struct req *r);
void api_dims_get(struct req *r);
void api_dims_update(struct req *r);
void api_dims_delete(struct req *r);
void api_owner_put(struct req *r);
void api_owner_get(struct req *r);
void api_owner_unowned(struct req *r);
void api_owner_import(struct req *r);
void api_rules_list(struct req *r);
void api_rules_create(struct req *r);
void api_rules_get(struct req *r);
void api_rules_update(struct req *r);
void api_rules_delete(struct req *r);
void api_rules_dry_run(struct req *r);

/* metrics.c */
void api_metrics(struct req *r);

/* usage.c: usage over time, the rollup job on demand, a GPU's timeline */
void api_usage_get(struct req *r);
void api_usage_rollup(struct req *r);
void api_gpu_timeline(struct req *r);

/* import.c */
void api_resources_import(struct req *r);

/* prices.c: the price catalog */
void api_prices_list(struct req *r);
void api_prices_create(struct req *r);
void api_prices_rate(struct req *r);
void api_prices_get(struct req *r);
void api_prices_update(struct req *r);
void api_prices_delete(struct req *r);

/* billing.c: cloud billing import */
void api_billing_import(struct req *r);
void api_billing_unmatched(struct req *r);

/* showback.c: cost settings and the showback report */
void api_cost_settings_get(struct req *r);
void api_cost_settings_put(struct req *r);
void api_showback(struct req *r);

/* Shared by resources.c and import.c: validates a resource object (and,
 * for a VM, that host_id names a server in the same data center) into
 * *in; on GI_INVALID *err names the field. Caller decrefs in->attrs. */
struct gi_resource_in;
struct gi_verr;
struct store_resource;
int api_resource_check(struct store *st, const json_t *obj, bool from_text,
                       struct gi_resource_in *in, struct gi_verr *err);
/* Views a checked resource as the store's input struct (borrowing). */
void api_resource_to_store(const struct gi_resource_in *in, struct store_resource *out);

/* insights.c: usage patterns, waste and savings from the rollups */
void api_usage_heatmap(struct req *r);
void api_usage_trend(struct req *r);
void api_insights_idle(struct req *r);
void api_insights_alloc_idle(struct req *r);
void api_insights_waste_by_team(struct req *r);
void api_insights_top_consumers(struct req *r);
void api_insights_overrequest(struct req *r);
void api_insights_savings(struct req *r);

/* assets.c: hardware assets, their lifecycle and audit trail */
void api_assets_list(struct req *r);
void api_assets_create(struct req *r);
void api_assets_get(struct req *r);
void api_assets_update(struct req *r);
void api_assets_stage(struct req *r);
void api_assets_events(struct req *r);
/* A data-center filter parameter `datacenter` (an id or a name) into
 * *id: 0 when absent, -1 when it names no data center (nothing matches). */
bool api_datacenter_param_or_reply(struct req *r, int64_t *id);
void api_asset_events_export(struct req *r);
void api_asset_stage_counts(struct req *r);

/* reservations.c: spare reservations */
void api_reservations_list(struct req *r);
void api_reservations_release(struct req *r);
void api_reservations_update(struct req *r);

/* scans.c: scans and room audits */
void api_scans_create(struct req *r);
void api_audits_list(struct req *r);
void api_audits_create(struct req *r);
void api_audits_get(struct req *r);
void api_audits_scan(struct req *r);
void api_audits_close(struct req *r);
/* labels.c: QR labels, one as SVG and sheets as HTML; the scan URL is
 * <base URL>/scan/<tag>, the base URL set once before serving. */
void api_assets_label(struct req *r);
void api_assets_labels(struct req *r);
void api_labels_base_url_set(const char *url);
/* labels.c: GET /scan/<tag>, the URL in a label's QR code: redirects to
 * the dashboard's scan page of the asset (which signs the visitor in
 * first). */
void api_scan_page(struct req *r);

/* lifecycle_rules.c: lifecycle rules, their dry runs and runs, and an
 * asset's health */
void api_lrules_list(struct req *r);
void api_lrules_create(struct req *r);
void api_lrules_get(struct req *r);
void api_lrules_update(struct req *r);
void api_lrules_delete(struct req *r);
void api_lrules_dry_run(struct req *r);
void api_lrules_run(struct req *r);
void api_lrules_dry_run_body(struct req *r);
void api_lrules_evaluate(struct req *r);
void api_assets_health(struct req *r);

/* asset_import.c: the CSV import, and the export's rows: takes ownership
 * of a list page's asset documents and returns them as the import's
 * columns. */
void api_assets_import(struct req *r);
json_t *api_asset_csv_rows(json_t *items);

/* webhooks.c: outbound webhooks and their delivery log (admin) */
void api_webhooks_list(struct req *r);
void api_webhooks_create(struct req *r);
void api_webhooks_get(struct req *r);
void api_webhooks_update(struct req *r);
void api_webhooks_delete(struct req *r);
void api_webhooks_test(struct req *r);
void api_webhooks_deliveries(struct req *r);
void api_webhook_deliveries_retry(struct req *r);

/* tickets.c */
/* sync_conflicts.c */
void api_assets_conflicts(struct req *r);
void api_sync_conflicts_list(struct req *r);
void api_sync_conflicts_resolve(struct req *r);
void api_sync_pushes_list(struct req *r);
void api_tickets_list(struct req *r);
void api_tickets_get(struct req *r);
void api_tickets_create(struct req *r);
void api_tickets_close(struct req *r);

#endif
