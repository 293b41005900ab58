/* The bodies of outbound webhook deliveries, built from one context
 * object per event, one builder per webhook format; and the reading of a
 * ticket system's reply. Pure functions, no I/O.
 *
 * The context (borrowed) is what the event is about, every member
 * optional: {"event", "title", "body", "reason",
 *   "asset": {"tag", "kind", "serial", "model", "location": {"datacenter",
 *             "room", "rack", "u", "storage"}, "stage", "owner_team",
 *             "warranty": {"end", "days_left", "status"}},
 *   "gpu": {"uuid", "host", ...}, "rule": {"id", "name"},
 *   "ticket": {"id", "title", "body", "dedupe_key", ...}}.
 * A member that is absent or of the wrong type is left out of the body;
 * it never fails the build. */
#ifndef GI_HOOKBODY_H
#define GI_HOOKBODY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Jira's longest summary, in bytes. */
#define HOOKBODY_SUMMARY_MAX 255

/* True for the formats a webhook may have: generic, jira, jira_v2,
 * servicenow. */
bool hookbody_format_ok(const char *format);
/* Checks a webhook's config for its format (jira: project required, a
 * string; issuetype, priority strings; labels an array of strings;
 * servicenow: assignment_group, category, caller_id strings, urgency and
 * impact 1..3 as a number or string). false with err naming the member. */
bool hookbody_config_ok(const char *format, const json_t *config, char *err, size_t errlen);

/* The body for `format`: generic is the context with "event", "id"
 * (msg_id) and "at" (RFC 3339 of at) set; jira a v3 create-issue body
 * with an Atlassian Document Format description; jira_v2 the same with a
 * wiki-markup description; servicenow an incident record. config
 * (borrowed, may be NULL) is the webhook's. Returns a new object (caller
 * decrefs), NULL for an unknown format or no memory. */
json_t *hookbody_build(const char *format, const char *event, const json_t *context,
                       const json_t *config, const char *msg_id, int64_t at);

/* The ticket summary of a context: its "title", else the ticket's, else
 * "<event>: <asset tag or GPU uuid>", cut to at most max bytes on a
 * UTF-8 character boundary, into out (max + 1 bytes). */
void hookbody_title(const json_t *context, const char *event, char *out, size_t max);

/* What a ticket system answered to a create: for jira/jira_v2 a 2xx with
 * {"key"} gives system "jira", key and url "<site>/browse/<key>" (site:
 * the scheme and authority of the webhook's url); for servicenow a 2xx
 * with {"result":{"number","sys_id"}} gives "servicenow", the number and
 * "<instance>/nav_to.do?uri=<table>.do?sys_id=<sys_id>". Returns true
 * when the reply named a ticket; the buffers hold at least 32, 128 and
 * 512 bytes. */
bool hookbody_reply(const char *format, const char *url, long status, const char *reply, size_t len,
                    char *system, char *key, char *link);

#endif
