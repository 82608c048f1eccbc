/* Whole writes to a descriptor: the loop every writer of files and pipes needs once. */
#ifndef KP_IO_H
#define KP_IO_H

#include <stddef.h>

/* Writes all n bytes of p to fd, retrying short writes and EINTR; 0, or -errno. */
int kp_write_all(int fd, const void *p, size_t n);

#endif
