/* Serves the embedded dashboard files with their content types and a
 * strict content security policy. */
#include "http/assets.h"
#include "http/request.h"
#include "store/embedded.h"

#include <string.h>

static const char *content_type(const char *name)
{
    static const struct {
        const char *ext, *type;
    } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".mjs", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".json", "application/json"},
    };
    const char *dot = strrchr(name, '.');

    for (size_t i = 0; dot && i < sizeof types / sizeof *types; i++)
        if (strcmp(dot, types[i].ext) == 0)
            return types[i].type;
    return "application/octet-stream";
}

bool assets_serve(struct req *r)
{
    const char *want = strcmp(r->path, "/") == 0 ? "index.html" : r->path + 1;

    for (const struct gi_embedded *a = gi_web_assets; a->name; a++) {
        if (strcmp(a->name, want) != 0)
            continue;
        reply_bytes(r, 200, content_type(a->name), a->data, a->len, false);
        reply_header(r, "Content-Security-Policy",
                     "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                     "frame-ancestors 'none'; base-uri 'none'; form-action 'self'");
        reply_header(r, "X-Frame-Options", "DENY");
        reply_header(r, "Referrer-Policy", "no-referrer");
        return true;
    }
    return false;
}
