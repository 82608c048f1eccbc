/* Whole reads and writes of a descriptor: the loops every reader and writer of files and
 * pipes needs once. */
#ifndef KP_IO_H
#define KP_IO_H

#include <stddef.h>
#include <stdint.h>

/* Writes all n bytes of p to fd, retrying short writes and EINTR; 0, or -errno. */
int kp_write_all(int fd, const void *p, size_t n);
/* The same at offset off (pwrite): 0, or -errno. */
int kp_pwrite_all(int fd, const void *p, size_t n, uint64_t off);
/* Reads exactly n bytes at offset off (pread), retrying short reads and EINTR: 0, -errno,
 * or -ENODATA when the file ends first. */
int kp_pread_all(int fd, void *p, size_t n, uint64_t off);

#endif
