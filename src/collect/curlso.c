/* Run-time loading of libcurl; see curlso.h. */
#include "collect/curlso.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

const struct curlso *curlso;

static struct curlso fns;
static void *lib;
static int opens;

int curlso_open(char *err, size_t errlen)
{
    static const char *const names[] = {"libcurl-gnutls.so.4", "libcurl.so.4"};
    static const struct {
        const char *sym;
        size_t off;
    } syms[] = {
        {"curl_global_init", offsetof(struct curlso, global_init)},
        {"curl_global_cleanup", offsetof(struct curlso, global_cleanup)},
        {"curl_easy_init", offsetof(struct curlso, easy_init)},
        {"curl_easy_setopt", offsetof(struct curlso, easy_setopt)},
        {"curl_easy_perform", offsetof(struct curlso, easy_perform)},
        {"curl_easy_getinfo", offsetof(struct curlso, easy_getinfo)},
        {"curl_easy_cleanup", offsetof(struct curlso, easy_cleanup)},
        {"curl_easy_strerror", offsetof(struct curlso, easy_strerror)},
        {"curl_easy_escape", offsetof(struct curlso, easy_escape)},
        {"curl_free", offsetof(struct curlso, free)},
        {"curl_slist_append", offsetof(struct curlso, slist_append)},
        {"curl_slist_free_all", offsetof(struct curlso, slist_free_all)},
    };

    if (opens++ > 0)
        return 0;
    for (size_t i = 0; lib == NULL && i < sizeof names / sizeof *names; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        snprintf(err, errlen, "cannot load libcurl: %s", dlerror());
        opens = 0;
        return -1;
    }
    for (size_t i = 0; i < sizeof syms / sizeof *syms; i++) {
        void *p = dlsym(lib, syms[i].sym);
        if (p == NULL) {
            snprintf(err, errlen, "libcurl lacks %s", syms[i].sym);
            dlclose(lib);
            lib = NULL;
            opens = 0;
            return -1;
        }
        /* Object and function pointers share a representation on every
         * platform dlsym serves (POSIX requires it). */
        memcpy((char *)&fns + syms[i].off, &p, sizeof p);
    }
    if (fns.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(err, errlen, "libcurl failed to initialize");
        dlclose(lib);
        lib = NULL;
        opens = 0;
        return -1;
    }
    curlso = &fns;
    return 0;
}

void curlso_close(void)
{
    if (opens == 0 || --opens > 0)
        return;
    fns.global_cleanup();
    curlso = NULL;
    dlclose(lib);
    lib = NULL;
}
