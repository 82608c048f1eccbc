/* A minimal, bounded XML reader for the small Baichuan documents (BAICHUAN.md section 4):
 * well-formedness check, element lookup by path, entity-decoded leaf text. No DTDs, no
 * CDATA, no recursion (a fixed-depth stack), no allocation; plus the text escaping the
 * serializers use. */
#ifndef KP_BC_XML_H
#define KP_BC_XML_H

#include <stddef.h>

#define BC_XML_MAX_DEPTH 16
#define BC_XML_MAX_NAME  64

struct bc_xml_span {
	const char *p;
	size_t len;
};

/* The whole document is well formed: starts with "<?xml", tags balance, depth at most
 * BC_XML_MAX_DEPTH. Returns 0 or -EBADMSG. */
int bc_xml_check(const char *doc, size_t len, const char **ret_reason);

/* Finds the index-th (from 0) element whose path from the top level of doc equals path
 * (segments separated by '/', e.g. "body/Encryption/nonce") and returns its content.
 * doc may be a fragment with several top-level elements (the content of another
 * element). Returns 0, -ENOENT, or -EBADMSG when the part scanned is malformed. */
int bc_xml_find(const char *doc, size_t len, const char *path, unsigned index, struct bc_xml_span *ret,
		const char **ret_reason);

/* The trimmed, entity-decoded text of a leaf element found as by bc_xml_find, written
 * NUL-terminated to out. Returns 0, -ENOENT, -EBADMSG (malformed, or the element has
 * child elements), -ENAMETOOLONG (the text does not fit in cap). */
int bc_xml_text(const char *doc, size_t len, const char *path, unsigned index, char *out, size_t cap,
		const char **ret_reason);

/* bc_xml_text parsed as an unsigned decimal number; -EINVAL when it is not one. */
int bc_xml_uint(const char *doc, size_t len, const char *path, unsigned long long *ret, const char **ret_reason);

/* Escapes s for element text into out (NUL-terminated); returns 0 or -ENOBUFS. */
int bc_xml_escape(const char *s, char *out, size_t cap);

#endif
