/* Logging to stderr, one line per event, with a UTC timestamp and level. */
#ifndef GI_LOG_H
#define GI_LOG_H

enum gi_log_level { GI_LOG_DEBUG, GI_LOG_INFO, GI_LOG_WARN, GI_LOG_ERROR };

/* Lowest level printed; GI_LOG_INFO unless changed at start-up. */
void gi_log_set_level(enum gi_log_level lvl);
void gi_log(enum gi_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gi_info(...) gi_log(GI_LOG_INFO, __VA_ARGS__)
#define gi_warn(...) gi_log(GI_LOG_WARN, __VA_ARGS__)
#define gi_error(...) gi_log(GI_LOG_ERROR, __VA_ARGS__)

#endif
