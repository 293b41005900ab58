/* Webhook bodies per format and ticket replies; see hookbody.h. */
#include "core/hookbody.h"
#include "core/util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A string member, or NULL when absent, not a string or empty. */
static const char *sget(const json_t *o, const char *key)
{
    const char *v = json_string_value(json_object_get(o, key));
    return v && *v ? v : NULL;
}

bool hookbody_format_ok(const char *format)
{
    return format && (strcmp(format, "generic") == 0 || strcmp(format, "jira") == 0 ||
                      strcmp(format, "jira_v2") == 0 || strcmp(format, "servicenow") == 0);
}

static bool is_jira(const char *format) { return strncmp(format, "jira", 4) == 0; }

/* "1".."3" from a number or a string member; NULL when absent or out of
 * range. */
static const char *level(const json_t *config, const char *key)
{
    static const char *const names[] = {"1", "2", "3"};
    const json_t *v = json_object_get(config, key);
    int64_t n = 0;

    if (json_is_integer(v))
        n = json_integer_value(v);
    else if (json_is_string(v) && gi_parse_int64(json_string_value(v), 1, 3, &n) != 0)
        n = 0;
    return n >= 1 && n <= 3 ? names[n - 1] : NULL;
}

bool hookbody_config_ok(const char *format, const json_t *config, char *err, size_t errlen)
{
    static const char *const jira_str[] = {"project", "issuetype", "priority", NULL};
    static const char *const snow_str[] = {"assignment_group", "category", "caller_id", NULL};
    const char *const *str = NULL;
    json_t *v, *lv;

    if (!json_is_object(config)) {
        snprintf(err, errlen, "config must be an object");
        return false;
    }
    if (is_jira(format))
        str = jira_str;
    else if (strcmp(format, "servicenow") == 0)
        str = snow_str;
    for (size_t i = 0; str && str[i]; i++) {
        v = json_object_get(config, str[i]);
        if (v && (!json_is_string(v) || json_string_length(v) > 200)) {
            snprintf(err, errlen, "config.%s must be a string of at most 200 bytes", str[i]);
            return false;
        }
    }
    if (is_jira(format)) {
        size_t i;
        if (!sget(config, "project")) {
            snprintf(err, errlen, "config.project (the Jira project key) is required");
            return false;
        }
        v = json_object_get(config, "labels");
        if (v && !json_is_array(v)) {
            snprintf(err, errlen, "config.labels must be an array of strings");
            return false;
        }
        json_array_foreach(v, i, lv) {
            if (!json_is_string(lv) || json_string_length(lv) > 200) {
                snprintf(err, errlen, "config.labels must be an array of strings");
                return false;
            }
        }
    } else if (strcmp(format, "servicenow") == 0) {
        static const char *const levels[] = {"urgency", "impact"};
        for (size_t i = 0; i < 2; i++)
            if (json_object_get(config, levels[i]) && !level(config, levels[i])) {
                snprintf(err, errlen, "config.%s must be 1, 2 or 3", levels[i]);
                return false;
            }
    }
    return true;
}

/* Cuts s to at most max bytes without splitting a UTF-8 sequence. */
static size_t utf8_cut(const char *s, size_t max)
{
    size_t n = strlen(s);

    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

void hookbody_title(const json_t *context, const char *event, char *out, size_t max)
{
    const json_t *asset = json_object_get(context, "asset");
    const char *t = sget(context, "title");
    char made[512];
    size_t n;

    if (!t)
        t = sget(json_object_get(context, "ticket"), "title");
    if (!t) {
        const char *what = sget(asset, "tag");
        if (!what)
            what = sget(json_object_get(context, "gpu"), "uuid");
        snprintf(made, sizeof made, "%s%s%s",
                 sget(context, "reason") ? sget(context, "reason") : event, what ? ": " : "",
                 what ? what : "");
        t = made;
    }
    n = utf8_cut(t, max);
    memcpy(out, t, n);
    out[n] = '\0';
}

/* The labelled facts of a context, one line each, as [label, text] pairs
 * into a new array; absent facts are left out. */
static json_t *facts(const json_t *context)
{
    const json_t *asset = json_object_get(context, "asset");
    const json_t *loc = json_object_get(asset, "location");
    const json_t *war = json_object_get(asset, "warranty");
    const json_t *rule = json_object_get(context, "rule");
    const json_t *gpu = json_object_get(context, "gpu");
    json_t *out = json_array();
    char buf[512];

#define FACT(label, text) json_array_append_new(out, json_pack("[s,s]", label, text))
    if (sget(asset, "tag")) {
        snprintf(buf, sizeof buf, "%s%s%s%s%s%s", sget(asset, "tag"),
                 sget(asset, "kind") ? " (" : "", sget(asset, "kind") ? sget(asset, "kind") : "",
                 sget(asset, "model") ? " " : "", sget(asset, "model") ? sget(asset, "model") : "",
                 sget(asset, "kind") ? ")" : "");
        FACT("Asset", buf);
    }
    if (sget(asset, "serial"))
        FACT("Serial", sget(asset, "serial"));
    if (json_is_object(loc)) {
        static const char *const parts[] = {"datacenter", "room", "rack", "u", "storage"};
        static const char *const pre[] = {"", "room ", "rack ", "U", "storage "};
        size_t n = 0;
        buf[0] = '\0';
        for (size_t i = 0; i < 5; i++) {
            const json_t *v = json_object_get(loc, parts[i]);
            char num[32];
            const char *s = json_string_value(v);
            if (json_is_integer(v)) {
                snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
                s = num;
            }
            if (!s || !*s)
                continue;
            n += (size_t)snprintf(buf + n, n < sizeof buf ? sizeof buf - n : 0, "%s%s%s",
                                  n ? " / " : "", pre[i], s);
            if (n >= sizeof buf)
                break;
        }
        if (buf[0])
            FACT("Location", buf);
    }
    if (sget(asset, "owner_team"))
        FACT("Owner team", sget(asset, "owner_team"));
    if (json_is_object(war) && (sget(war, "status") || sget(war, "end"))) {
        const json_t *d = json_object_get(war, "days_left");
        char days[48] = "";
        if (json_is_integer(d))
            snprintf(days, sizeof days, ", %lld days left", (long long)json_integer_value(d));
        snprintf(buf, sizeof buf, "%s%s%s%s", sget(war, "status") ? sget(war, "status") : "unknown",
                 sget(war, "end") ? ", ends " : "", sget(war, "end") ? sget(war, "end") : "", days);
        FACT("Warranty", buf);
    }
    if (json_is_object(rule) &&
        (sget(rule, "name") || json_is_integer(json_object_get(rule, "id")))) {
        snprintf(buf, sizeof buf, "%s (rule %lld)",
                 sget(rule, "name") ? sget(rule, "name") : "rule",
                 (long long)json_integer_value(json_object_get(rule, "id")));
        FACT("Rule", buf);
    }
    if (sget(gpu, "uuid")) {
        snprintf(buf, sizeof buf, "%s%s%s", sget(gpu, "uuid"), sget(gpu, "host") ? " on " : "",
                 sget(gpu, "host") ? sget(gpu, "host") : "");
        FACT("GPU", buf);
    }
#undef FACT
    return out;
}

/* The paragraphs of the description: each non-empty line of the body
 * (the context's or its ticket's), then the reason; at least the title. */
static json_t *paragraphs(const json_t *context, const char *title)
{
    const char *body = sget(context, "body");
    json_t *out = json_array();

    if (!body)
        body = sget(json_object_get(context, "ticket"), "body");
    while (body && *body) {
        size_t n = strcspn(body, "\n");
        size_t m = n;
        while (m > 0 && (body[m - 1] == '\r' || body[m - 1] == ' '))
            m--;
        if (m > 0)
            json_array_append_new(out, json_stringn(body, m));
        body += n;
        if (*body == '\n')
            body++;
    }
    if (sget(context, "reason")) {
        char buf[1024];
        snprintf(buf, sizeof buf, "Reason: %s", sget(context, "reason"));
        json_array_append_new(out, json_string(buf));
    }
    if (json_array_size(out) == 0)
        json_array_append_new(out, json_string(title));
    return out;
}

static json_t *adf_text(const char *s)
{
    return json_pack("{s:s, s:s}", "type", "text", "text", s);
}

static json_t *adf_para(json_t *content)
{
    return json_pack("{s:s, s:o}", "type", "paragraph", "content", content);
}

/* The ADF document: the paragraphs, then a bullet list of the facts
 * with each label in bold. */
static json_t *adf_doc(json_t *paras, json_t *lines)
{
    json_t *content = json_array(), *items = json_array(), *p, *f;
    size_t i;

    json_array_foreach(paras, i, p)
        json_array_append_new(content, adf_para(json_pack("[o]", adf_text(json_string_value(p)))));
    json_array_foreach(lines, i, f) {
        char label[64], value[600];
        json_t *strong;
        snprintf(label, sizeof label, "%s:", json_string_value(json_array_get(f, 0)));
        snprintf(value, sizeof value, " %s", json_string_value(json_array_get(f, 1)));
        strong = adf_text(label);
        json_object_set_new(strong, "marks", json_pack("[{s:s}]", "type", "strong"));
        json_array_append_new(items,
                              json_pack("{s:s, s:[o]}", "type", "listItem", "content",
                                        adf_para(json_pack("[o,o]", strong, adf_text(value)))));
    }
    if (json_array_size(items) > 0)
        json_array_append_new(content,
                              json_pack("{s:s, s:o}", "type", "bulletList", "content", items));
    else
        json_decref(items);
    return json_pack("{s:s, s:i, s:o}", "type", "doc", "version", 1, "content", content);
}

/* Plain lines: paragraphs separated by blank lines, then "<prefix>label:
 * value" per fact (jira_v2 wiki markup uses "* *label:* value"). */
static json_t *text_doc(json_t *paras, json_t *lines, bool wiki)
{
    json_t *p, *f;
    size_t i, cap = 1;
    char *buf, *w;
    json_t *out;

    json_array_foreach(paras, i, p)
        cap += json_string_length(p) + 2;
    json_array_foreach(lines, i, f)
        cap += json_string_length(json_array_get(f, 0)) + json_string_length(json_array_get(f, 1)) +
               16;
    if (!(buf = malloc(cap)))
        return NULL;
    w = buf;
    *w = '\0';
    json_array_foreach(paras, i, p)
        w += snprintf(w, cap - (size_t)(w - buf), "%s%s", i ? "\n\n" : "", json_string_value(p));
    json_array_foreach(lines, i, f)
        w += snprintf(w, cap - (size_t)(w - buf), wiki ? "%s* *%s:* %s" : "%s%s: %s",
                      i == 0 ? "\n\n" : "\n", json_string_value(json_array_get(f, 0)),
                      json_string_value(json_array_get(f, 1)));
    out = json_string(buf);
    free(buf);
    return out;
}

/* Labels of a Jira config with each run of white space made a '-', empty
 * ones dropped; ["gpuinv"] when the config names none. */
static json_t *labels(const json_t *config)
{
    const json_t *in = json_object_get(config, "labels"), *v;
    json_t *out = json_array();
    size_t i;

    json_array_foreach(in, i, v) {
        const char *s = json_string_value(v);
        char buf[256];
        size_t n = 0;
        if (!s)
            continue;
        for (; *s && n + 1 < sizeof buf; s++) {
            if (isspace((unsigned char)*s)) {
                if (n > 0 && buf[n - 1] != '-')
                    buf[n++] = '-';
            } else {
                buf[n++] = *s;
            }
        }
        while (n > 0 && buf[n - 1] == '-')
            n--;
        if (n > 0)
            json_array_append_new(out, json_stringn(buf, n));
    }
    if (!json_is_array(in))
        json_array_append_new(out, json_string("gpuinv"));
    return out;
}

static json_t *build_jira(const json_t *context, const json_t *config, const char *title,
                          json_t *paras, json_t *lines, bool v2)
{
    json_t *fields =
        json_pack("{s:{s:s}, s:{s:s}, s:s, s:o, s:o}", "project", "key",
                  sget(config, "project") ? sget(config, "project") : "", "issuetype", "name",
                  sget(config, "issuetype") ? sget(config, "issuetype") : "Task", "summary", title,
                  "description", v2 ? text_doc(paras, lines, true) : adf_doc(paras, lines),
                  "labels", labels(config));

    (void)context;
    if (fields && sget(config, "priority"))
        json_object_set_new(fields, "priority",
                            json_pack("{s:s}", "name", sget(config, "priority")));
    return json_pack("{s:o}", "fields", fields);
}

static json_t *build_servicenow(const json_t *context, const json_t *config, const char *title,
                                json_t *paras, json_t *lines)
{
    static const char *const copy[] = {"category", "assignment_group", "caller_id"};
    const char *tag = sget(json_object_get(context, "asset"), "tag");
    const char *key = sget(json_object_get(context, "ticket"), "dedupe_key");
    json_t *out = json_pack("{s:s, s:o, s:s, s:s}", "short_description", title, "description",
                            text_doc(paras, lines, false), "urgency",
                            level(config, "urgency") ? level(config, "urgency") : "3", "impact",
                            level(config, "impact") ? level(config, "impact") : "3");

    for (size_t i = 0; out && i < 3; i++)
        if (sget(config, copy[i]))
            json_object_set_new(out, copy[i], json_string(sget(config, copy[i])));
    if (out && tag)
        json_object_set_new(out, "cmdb_ci", json_string(tag));
    if (out && key)
        json_object_set_new(out, "correlation_id", json_string(key));
    return out;
}

json_t *hookbody_build(const char *format, const char *event, const json_t *context,
                       const json_t *config, const char *msg_id, int64_t at)
{
    char title[HOOKBODY_SUMMARY_MAX + 1];
    json_t *paras, *lines, *out = NULL;

    if (!hookbody_format_ok(format))
        return NULL;
    if (strcmp(format, "generic") == 0) {
        char when[40];
        out = json_is_object(context) ? json_deep_copy(context) : json_object();
        gi_time_format(at, when, sizeof when);
        if (out) {
            json_object_set_new(out, "event", json_string(event));
            json_object_set_new(out, "id", json_string(msg_id));
            json_object_set_new(out, "at", json_string(when));
        }
        return out;
    }
    hookbody_title(context, event, title, HOOKBODY_SUMMARY_MAX);
    paras = paragraphs(context, title);
    lines = facts(context);
    if (is_jira(format))
        out = build_jira(context, config, title, paras, lines, strcmp(format, "jira_v2") == 0);
    else
        out = build_servicenow(context, config, title, paras, lines);
    json_decref(paras);
    json_decref(lines);
    return out;
}

/* The scheme and authority of url ("https://x.atlassian.net"), into out;
 * its path (from the first '/' after the authority) through *path. */
static void origin(const char *url, char *out, size_t len, const char **path)
{
    const char *p = strstr(url, "://");
    size_t n;

    p = p ? p + 3 : url;
    n = (size_t)(p - url) + strcspn(p, "/?#");
    if (n >= len)
        n = len - 1;
    memcpy(out, url, n);
    out[n] = '\0';
    *path = url + strlen(out);
}

bool hookbody_reply(const char *format, const char *url, long status, const char *reply, size_t len,
                    char *system, char *key, char *link)
{
    json_t *doc;
    char site[256];
    const char *path;
    bool ok = false;

    system[0] = key[0] = link[0] = '\0';
    if (status < 200 || status > 299 || !reply || !format || strcmp(format, "generic") == 0)
        return false;
    if (!(doc = json_loadb(reply, len, JSON_REJECT_DUPLICATES, NULL)))
        return false;
    origin(url, site, sizeof site, &path);
    if (is_jira(format)) {
        const char *k = sget(doc, "key");
        if (k && strlen(k) < 128) {
            snprintf(system, 32, "jira");
            snprintf(key, 128, "%s", k);
            snprintf(link, 512, "%s/browse/%s", site, k);
            ok = true;
        }
    } else {
        const json_t *res = json_object_get(doc, "result");
        const char *num = sget(res, "number"), *sys_id = sget(res, "sys_id");
        const char *t = strstr(path, "/table/");
        char table[64] = "incident";
        if (t) {
            size_t n = strcspn(t + 7, "/?#");
            if (n > 0 && n < sizeof table) {
                memcpy(table, t + 7, n);
                table[n] = '\0';
            }
        }
        if (num && strlen(num) < 128) {
            snprintf(system, 32, "servicenow");
            snprintf(key, 128, "%s", num);
            if (sys_id)
                snprintf(link, 512, "%s/nav_to.do?uri=%s.do?sys_id=%s", site, table, sys_id);
            ok = true;
        }
    }
    json_decref(doc);
    return ok;
}
