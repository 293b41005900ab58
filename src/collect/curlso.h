/* libcurl, loaded at run time. The agent loads it only while it sends its
 * spool and unloads it between sends, so the resident agent does not carry
 * libcurl's large dependency tree (TLS, Kerberos, LDAP, SSH, compression);
 * the server loads it once at start-up. Only curl.h's types and constants
 * are used at build time. */
#ifndef GI_CURLSO_H
#define GI_CURLSO_H

#include <curl/curl.h>
#include <stddef.h>

struct curlso {
    CURLcode (*global_init)(long flags);
    void (*global_cleanup)(void);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *h, CURLoption opt, ...);
    CURLcode (*easy_perform)(CURL *h);
    CURLcode (*easy_getinfo)(CURL *h, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *h);
    const char *(*easy_strerror)(CURLcode code);
    char *(*easy_escape)(CURL *h, const char *s, int len);
    void (*free)(void *p);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
};

/* The loaded library's functions, or NULL while it is not loaded. */
extern const struct curlso *curlso;

/* Loads libcurl (GnuTLS flavour first) and initializes it; nested calls
 * are counted. Returns 0, or -1 with err filled. Not thread-safe: call it
 * before starting threads that use curl, or from one thread only. */
int curlso_open(char *err, size_t errlen);
/* Undoes one curlso_open; the last one cleans libcurl up and unloads it. */
void curlso_close(void);

#endif
