/* Where the running program lives: /proc/self/exe, read once per call. */
#ifndef KP_SELF_PATH_H
#define KP_SELF_PATH_H

#include <stddef.h>

/* The program's own path into buf; 0, or -errno (-ENAMETOOLONG when it does not fit). */
int kp_self_path(char *buf, size_t cap);
/* The directory that holds the program (its path up to the last '/'); 0 or -errno. */
int kp_self_dir(char *buf, size_t cap);

#endif
