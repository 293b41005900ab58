/* One status vocabulary for the whole program. Every function that can fail
 * returns one of these; results travel through out-parameters. */
#ifndef GI_STATUS_H
#define GI_STATUS_H

enum gi_status {
    GI_OK = 0,
    GI_NOT_FOUND,   /* the addressed record does not exist */
    GI_CONFLICT,    /* uniqueness or state precondition failed */
    GI_INVALID,     /* the input is malformed or out of range */
    GI_TOO_LARGE,   /* the input exceeds a hard bound */
    GI_UNAVAILABLE, /* transient: busy database, peer down; retry may work */
    GI_NO_SPACE,    /* the storage's disk is full; retry once space is freed */
    GI_RETRY,       /* the write lost a race with another (serialization failure,
                       deadlock) and was undone; running it again may work */
    GI_INTERNAL,    /* a bug or an unexpected library failure */
};

/* Stable lower-case name of a status, for logs and error codes. */
const char *gi_status_name(int st);

#endif
