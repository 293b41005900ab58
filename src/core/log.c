/* Logging: stderr lines "2026-01-02T03:04:05Z level message". */
#include "core/log.h"
#include "core/util.h"

#include <stdarg.h>
#include <stdio.h>

static enum gi_log_level min_level = GI_LOG_INFO;

void gi_log_set_level(enum gi_log_level lvl) { min_level = lvl; }

void gi_log(enum gi_log_level lvl, const char *fmt, ...)
{
    static const char *const names[] = {"debug", "info", "warn", "error"};
    char ts[32], msg[1024];
    va_list ap;

    if (lvl < min_level)
        return;
    gi_time_format(gi_now(), ts, sizeof ts);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* One fprintf per line keeps concurrent lines from interleaving. */
    fprintf(stderr, "%s %s %s\n", ts, names[lvl], msg);
}
