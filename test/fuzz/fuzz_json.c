/* libFuzzer harness for the common bounded JSON reader (common/json.h): parse, read every
 * string and number, look every key up by its unescaped text (it must find that very
 * member: duplicates are refused), and write what was read back through the writer. */
#include <stddef.h>
#include <stdint.h>

#include "json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct json_tok toks[512];
	static char out[64 * 1024];
	struct json_doc d;
	if (json_parse(&d, (const char *)data, size, toks, 512) < 0)
		return 0;
	struct json_w w;
	jw_init(&w, out, sizeof(out));
	jw_arr(&w);
	for (unsigned i = 0; i < d.ntoks; i++) {
		char buf[256];
		int64_t v;
		double x;
		switch (d.toks[i].type) {
		case JSON_STRING:
			if (json_get_str(&d, (int)i, buf, sizeof(buf)) >= 0)
				jw_str(&w, buf);
			break;
		case JSON_NUMBER:
			if (json_get_int(&d, (int)i, &v) == 0)
				jw_int(&w, v);
			else if (json_get_double(&d, (int)i, &x) == 0)
				jw_double(&w, x);
			break;
		case JSON_OBJECT:
			json_obj_get(&d, (int)i, "id");
			for (uint32_t k = 0, t = i + 1; k < d.toks[i].size; k++, t = d.toks[t + 1].next)
				if (json_get_str(&d, (int)t, buf, sizeof(buf)) >= 0 &&
				    json_obj_get(&d, (int)i, buf) != (int)t + 1)
					__builtin_trap(); /* a key that does not find its own member */
			break;
		case JSON_ARRAY:
			json_arr_get(&d, (int)i, d.toks[i].size ? d.toks[i].size - 1 : 0);
			break;
		default:
			jw_bool(&w, d.toks[i].type == JSON_TRUE);
			break;
		}
	}
	jw_arr_end(&w);
	size_t len;
	if (jw_finish(&w, &len) == 0 && json_parse(&d, out, len, toks, 512) != 0)
		__builtin_trap(); /* the writer wrote what the reader refuses */
	return 0;
}
