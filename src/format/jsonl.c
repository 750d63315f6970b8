/*
 * @brief JSON Lines serialization of trace records (see jsonl.h, docs/trace-format.md).
 *
 * The writer formats every event here, so the common path avoids printf: integers and hex are
 * converted by hand into the buffer (bench/writer_throughput measures this path).
 */
#include "format/jsonl.h"

#include "format/elided.h"

#include "format/torch_entry.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// --- buffer -------------------------------------------------------------------------------------

void
gmt_buf_free(struct gmt_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

void
gmt_buf_reset(struct gmt_buf *b)
{
	b->len = 0;
	b->oom = false;
}

static bool
buf_reserve(struct gmt_buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + extra)
		cap *= 2;
	char *p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void
gmt_buf_append(struct gmt_buf *b, const char *s, size_t n)
{
	if (!buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

void
gmt_buf_puts(struct gmt_buf *b, const char *s)
{
	gmt_buf_append(b, s, strlen(s));
}

void
gmt_buf_printf(struct gmt_buf *b, const char *fmt, ...)
{
	va_list ap;

	for (int attempt = 0; attempt < 2; attempt++) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->data ? b->data + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		if (!buf_reserve(b, (size_t)n + 1))
			return;
	}
}

static void
buf_u64(struct gmt_buf *b, uint64_t v)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	gmt_buf_append(b, tmp + i, sizeof(tmp) - i);
}

static void
buf_i64(struct gmt_buf *b, int64_t v)
{
	if (v < 0) {
		gmt_buf_append(b, "-", 1);
		buf_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		buf_u64(b, (uint64_t)v);
	}
}

void
gmt_buf_hex(struct gmt_buf *b, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[20];
	size_t i = sizeof(tmp);

	tmp[--i] = '"';
	do {
		tmp[--i] = digits[v & 0xf];
		v >>= 4;
	} while (v);
	tmp[--i] = 'x';
	tmp[--i] = '0';
	tmp[--i] = '"';
	gmt_buf_append(b, tmp + i, sizeof(tmp) - i);
}

/* Length of a valid UTF-8 sequence starting at s (at most n bytes), 0 if invalid. */
static size_t
utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* reject overlong forms, surrogates and values past U+10FFFF */
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return len;
}

void
gmt_buf_json_string(struct gmt_buf *b, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0;

	gmt_buf_append(b, "\"", 1);
	while (i < n) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\') {
			char esc[2] = {'\\', (char)c};
			gmt_buf_append(b, esc, 2);
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			char esc[8];
			snprintf(esc, sizeof(esc), "\\u%04x", c);
			gmt_buf_append(b, esc, 6);
			i++;
		} else if (c < 0x80) {
			gmt_buf_append(b, (const char *)s + i, 1);
			i++;
		} else {
			size_t len = utf8_len(s + i, n - i);
			if (len) {
				gmt_buf_append(b, (const char *)s + i, len);
				i += len;
			} else {
				gmt_buf_append(b, "\xef\xbf\xbd",
					       3); /* U+FFFD: keep the line valid JSON */
				i++;
			}
		}
	}
	gmt_buf_append(b, "\"", 1);
}

#define LIT(b, s) gmt_buf_append((b), (s), sizeof(s) - 1)

static void
buf_bytes_hex(struct gmt_buf *b, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[128];
	size_t k = 0;

	gmt_buf_append(b, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		tmp[k++] = digits[p[i] >> 4];
		tmp[k++] = digits[p[i] & 0xf];
		if (k == sizeof(tmp)) {
			gmt_buf_append(b, tmp, k);
			k = 0;
		}
	}
	gmt_buf_append(b, tmp, k);
	gmt_buf_append(b, "\"", 1);
}

static void
json_str_or_null(struct gmt_buf *b, const char *s)
{
	if (s)
		gmt_buf_json_string(b, s, strlen(s));
	else
		LIT(b, "null");
}

// --- records ------------------------------------------------------------------------------------

static void
rank_value(struct gmt_buf *b, bool has, long v)
{
	if (has)
		buf_i64(b, v);
	else
		LIT(b, "null");
}

void
gmt_jsonl_header(struct gmt_buf *b, const struct gmt_header_info *h)
{
	LIT(b, "{\"type\":\"header\",\"format\":\"gpumemtrace\",\"version\":");
	buf_u64(b, GMT_FORMAT_VERSION);
	LIT(b, ",\"tracer\":");
	gmt_buf_json_string(b, h->tracer_version, strlen(h->tracer_version));
	LIT(b, ",\"pid\":");
	buf_i64(b, h->pid);
	LIT(b, ",\"ppid\":");
	buf_i64(b, h->ppid);
	LIT(b, ",\"host\":");
	gmt_buf_json_string(b, h->host, strlen(h->host));
	LIT(b, ",\"argv\":[");
	size_t pos = 0, argc = 0;
	while (pos < h->cmdline_len) {
		const char *arg = h->cmdline + pos;
		size_t len = strnlen(arg, h->cmdline_len - pos);
		if (argc++)
			LIT(b, ",");
		gmt_buf_json_string(b, arg, len);
		pos += len + 1;
	}
	LIT(b, "],\"start_ts\":");
	buf_u64(b, h->start_ts);
	LIT(b, ",\"start_unix_ns\":");
	buf_u64(b, h->start_unix_ns);
	LIT(b, ",\"rank\":");
	if (h->rank.has_rank || h->rank.has_local_rank || h->rank.has_world_size) {
		LIT(b, "{\"rank\":");
		rank_value(b, h->rank.has_rank, h->rank.rank);
		LIT(b, ",\"local_rank\":");
		rank_value(b, h->rank.has_local_rank, h->rank.local_rank);
		LIT(b, ",\"world_size\":");
		rank_value(b, h->rank.has_world_size, h->rank.world_size);
		LIT(b, "}");
	} else {
		LIT(b, "null");
	}
	LIT(b, ",\"forked_from\":");
	if (h->forked_from)
		buf_i64(b, h->forked_from);
	else
		LIT(b, "null");
	LIT(b, ",\"coverage\":");
	gmt_buf_json_string(b, h->coverage, strlen(h->coverage));
	LIT(b, ",\"coverage_reason\":");
	if (h->coverage_reason)
		gmt_buf_json_string(b, h->coverage_reason, strlen(h->coverage_reason));
	else
		LIT(b, "null");
	LIT(b, ",\"capture\":[");
	for (size_t i = 0; h->capture && h->capture[i]; i++) {
		if (i)
			LIT(b, ",");
		gmt_buf_json_string(b, h->capture[i], strlen(h->capture[i]));
	}
	LIT(b, "],\"cuda\":{\"runtime\":[");
	for (size_t i = 0; h->cuda_runtime && h->cuda_runtime[i]; i++) {
		if (i)
			LIT(b, ",");
		gmt_buf_json_string(b, h->cuda_runtime[i], strlen(h->cuda_runtime[i]));
	}
	LIT(b, "],\"cupti\":");
	json_str_or_null(b, h->cupti);
	LIT(b, "},\"options\":{\"ring_slots\":");
	buf_u64(b, h->ring_slots);
	LIT(b, ",\"flush_ms\":");
	buf_u64(b, h->flush_ms);
	LIT(b, ",\"snapshot_ms\":");
	buf_u64(b, h->snapshot_ms);
	if (h->bounded) {
		LIT(b, ",\"" GMT_OPT_BOUNDED "\":true,\"" GMT_OPT_BUCKET_MS "\":");
		buf_u64(b, h->bucket_ms);
	}
	LIT(b, "},\"stacks\":{\"native\":");
	gmt_buf_puts(b, h->stacks_native ? "true" : "false");
	LIT(b, ",\"python\":");
	json_str_or_null(b, h->stacks_python);
	LIT(b, ",\"depth\":");
	buf_u64(b, h->stacks_depth);
	LIT(b, ",\"interpreter\":");
	gmt_buf_puts(b, h->stacks_interpreter ? "true" : "false");
	LIT(b, "}}\n");
}

void
gmt_jsonl_stack(struct gmt_buf *b, const struct gmt_stack_view *st)
{
	LIT(b, "{\"type\":\"stack\",\"id\":");
	buf_u64(b, st->id);
	LIT(b, ",\"frames\":[");
	for (size_t i = 0; i < st->nframes; i++) {
		if (i)
			LIT(b, ",");
		gmt_buf_hex(b, st->frames[i]);
	}
	LIT(b, "]");
	if (st->npy) {
		LIT(b, ",\"py\":[");
		for (size_t i = 0; i < st->npy; i++) {
			gmt_buf_puts(b, i ? ",[" : "[");
			buf_u64(b, st->py[i].code_id);
			LIT(b, ",");
			buf_u64(b, st->py[i].offset_entry >> 1);
			gmt_buf_puts(b, (st->py[i].offset_entry & 1) ? ",1]" : ",0]");
		}
		LIT(b, "]");
	} else if (st->pystate == GMT_PYSTATE_EMPTY) {
		LIT(b, ",\"pystate\":\"empty\"");
	} else if (st->pystate == GMT_PYSTATE_NONE) {
		LIT(b, ",\"pystate\":\"none\"");
	}
	LIT(b, "}\n");
}

void
gmt_jsonl_pycode(struct gmt_buf *b, const struct gmt_pycode_view *c)
{
	LIT(b, "{\"type\":\"pycode\",\"id\":");
	buf_u64(b, c->id);
	LIT(b, ",\"file\":");
	json_str_or_null(b, c->file);
	LIT(b, ",\"name\":");
	json_str_or_null(b, c->name);
	LIT(b, ",\"qualname\":");
	json_str_or_null(b, c->qualname ? c->qualname : c->name);
	LIT(b, ",\"firstlineno\":");
	buf_i64(b, c->firstlineno);
	LIT(b, ",\"python\":");
	json_str_or_null(b, c->version);
	LIT(b, ",\"linetable\":");
	buf_bytes_hex(b, c->linetable, c->linetable_len);
	LIT(b, "}\n");
}

void
gmt_jsonl_pyinfo(struct gmt_buf *b, const char *version)
{
	LIT(b, "{\"type\":\"pyinfo\",\"python\":");
	json_str_or_null(b, version);
	LIT(b, "}\n");
}

void
gmt_jsonl_modules_begin(struct gmt_buf *b, uint64_t seq)
{
	LIT(b, "{\"type\":\"modules\",\"seq\":");
	buf_u64(b, seq);
	LIT(b, ",\"modules\":[");
}

/* Whether @p s (@p n bytes) is valid UTF-8 throughout: JSON strings can carry it unchanged. */
static bool
utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0, len; i < n; i += len)
		if (!(len = utf8_len((const unsigned char *)s + i, n - i)))
			return false;
	return true;
}

void
gmt_jsonl_modules_entry(struct gmt_buf *b, const struct gmt_module_view *m, size_t index)
{
	gmt_buf_puts(b, index ? ",{\"path\":" : "{\"path\":");
	json_str_or_null(b, m->path);
	/*
	 * A path is bytes; JSON text is UTF-8. A path that is not valid UTF-8 gets `path` for
	 * display (U+FFFD for each stray byte) and its bytes, losslessly, in `path_hex`: the file
	 * the analyzer opens (docs/trace-format.md, "modules").
	 */
	if (m->path && !utf8_valid(m->path, strlen(m->path))) {
		LIT(b, ",\"path_hex\":");
		buf_bytes_hex(b, (const uint8_t *)m->path, strlen(m->path));
	}
	LIT(b, ",\"base\":");
	gmt_buf_hex(b, m->base);
	LIT(b, ",\"build_id\":");
	buf_bytes_hex(b, m->build_id, m->build_id_len);
	LIT(b, ",\"segments\":[");
	for (size_t k = 0; k < m->nsegments; k++) {
		gmt_buf_puts(b, k ? ",[" : "[");
		buf_u64(b, m->segments[k][0]);
		LIT(b, ",");
		buf_u64(b, m->segments[k][1]);
		LIT(b, "]");
	}
	LIT(b, "]}");
}

void
gmt_jsonl_modules_end(struct gmt_buf *b)
{
	LIT(b, "]}\n");
}

static void
event_marker(struct gmt_buf *b, const struct gmt_event *ev)
{
	LIT(b, "{\"type\":\"marker\",\"seq\":");
	buf_u64(b, ev->seq);
	LIT(b, ",\"ts\":");
	buf_u64(b, ev->ts_ns);
	LIT(b, ",\"tid\":");
	buf_i64(b, ev->tid);
	LIT(b, ",\"label\":");
	gmt_buf_json_string(b, ev->label, strnlen(ev->label, sizeof(ev->label)));
	/* plain marks keep the line they always had: no range key */
	if (ev->range == GMT_RANGE_PUSH || ev->range == GMT_RANGE_POP) {
		if (ev->range == GMT_RANGE_PUSH)
			LIT(b, ",\"range\":\"push\",\"depth\":");
		else
			LIT(b, ",\"range\":\"pop\",\"depth\":");
		buf_u64(b, ev->range_depth);
	}
	if (ev->flags & GMT_EV_AUTO_STEP)
		LIT(b, ",\"auto\":\"step\"");
	LIT(b, "}\n");
}

/* ,"key":value pieces of the block line (KEY is a literal with its quotes, comma and colon) */
#define KEY_U64(b, key, v) (LIT(b, key), buf_u64(b, v))
#define KEY_HEX(b, key, v) (LIT(b, key), gmt_buf_hex(b, v))
#define KEY_BOOL(b, key, v) (LIT(b, key), (v) ? LIT(b, "true") : LIT(b, "false"))

/* A caching allocator's own event (PyTorch bridge): a "block" line. */
static void
event_block(struct gmt_buf *b, const struct gmt_event *ev, uint32_t stack_id)
{
	unsigned a = ev->torch_action;
	uint32_t f = ev->cuda_flags;

	KEY_U64(b, "{\"type\":\"block\",\"seq\":", ev->seq);
	KEY_U64(b, ",\"ts\":", ev->ts_ns);
	LIT(b, ",\"tid\":");
	buf_i64(b, ev->tid);
	LIT(b, ",\"action\":\"");
	gmt_buf_puts(b, gmt_torch_action_name(a));
	LIT(b, "\",\"device\":");
	buf_i64(b, ev->device);
	if (a != GMT_TORCH_OOM && a != GMT_TORCH_SNAPSHOT)
		KEY_HEX(b, ",\"ptr\":", ev->ptr);
	KEY_U64(b, ",\"size\":", ev->size);
	if (a == GMT_TORCH_OOM)
		KEY_U64(b, ",\"device_free\":", ev->free_bytes);
	if (a == GMT_TORCH_STATE_BLOCK) {
		KEY_U64(b, ",\"requested\":", ev->requested);
		KEY_BOOL(b, ",\"allocated\":", f & GMT_TORCH_F_ALLOCATED);
		KEY_BOOL(b, ",\"active\":", f & GMT_TORCH_F_ACTIVE);
	}
	if (a == GMT_TORCH_STATE_SEGMENT) {
		if (f & GMT_TORCH_F_EXPANDABLE)
			LIT(b, ",\"expandable\":true");
		if (f & GMT_TORCH_F_LARGE)
			LIT(b, ",\"pool_type\":\"large\"");
		else
			LIT(b, ",\"pool_type\":\"small\"");
	}
	KEY_HEX(b, ",\"stream\":", ev->stream);
	if (f & GMT_TORCH_F_HAS_POOL) {
		KEY_U64(b, ",\"pool\":[", ev->pool);
		KEY_U64(b, ",", ev->pool2);
		LIT(b, "]");
	}
	if (stack_id)
		KEY_U64(b, ",\"stack\":", stack_id);
	if (ev->flags & GMT_EV_IN_GC)
		LIT(b, ",\"gc\":true");
	if (ev->label[0]) {
		LIT(b, ",\"meta\":");
		gmt_buf_json_string(b, ev->label, strnlen(ev->label, sizeof(ev->label)));
	}
	LIT(b, "}\n");
}

static void
put_str_key(struct gmt_buf *b, const char *key, const char *val)
{
	if (!val)
		return;
	gmt_buf_puts(b, key);
	gmt_buf_json_string(b, val, strlen(val));
}

/* The PyTorch layer's status: a "torch" line. */
static void
event_layer(struct gmt_buf *b, const struct gmt_event *ev)
{
	const struct gmt_torch_layer *l = ev->layer;

	LIT(b, "{\"type\":\"torch\",\"seq\":");
	buf_u64(b, ev->seq);
	LIT(b, ",\"ts\":");
	buf_u64(b, ev->ts_ns);
	if (l) {
		put_str_key(b, ",\"version\":", l->version);
		put_str_key(b, ",\"backend\":", l->backend);
		put_str_key(b, ",\"alloc_conf\":", l->alloc_conf);
		put_str_key(b, ",\"layer\":", l->status);
		put_str_key(b, ",\"detail\":", l->detail);
	}
	LIT(b, "}\n");
}

void
gmt_jsonl_event(struct gmt_buf *b, const struct gmt_event *ev, uint32_t stack_id)
{
	if (ev->op == GMT_OP_MARKER) {
		event_marker(b, ev);
		return;
	}
	if (ev->op == GMT_OP_BLOCK) {
		event_block(b, ev, stack_id);
		return;
	}
	if (ev->op == GMT_OP_LAYER) {
		event_layer(b, ev);
		return;
	}
	if (ev->op == GMT_OP_HOLDERS) {
		LIT(b, "{\"type\":\"holders\",\"seq\":");
		buf_u64(b, ev->seq);
		LIT(b, ",\"ts\":");
		buf_u64(b, ev->ts_ns);
		LIT(b, ",\"holders\":");
		gmt_buf_puts(b, ev->layer && ev->layer->holders ? ev->layer->holders : "[]");
		LIT(b, "}\n");
		return;
	}
	bool reset = ev->op == GMT_OP_RESET, usage = ev->op == GMT_OP_USAGE;

	LIT(b, "{\"type\":\"event\",\"seq\":");
	buf_u64(b, ev->seq);
	LIT(b, ",\"ts\":");
	buf_u64(b, ev->ts_ns);
	LIT(b, ",\"tid\":");
	buf_i64(b, ev->tid);
	LIT(b, ",\"op\":\"");
	gmt_buf_puts(b, gmt_op_name((enum gmt_op)ev->op));
	LIT(b, "\",\"api\":\"");
	gmt_buf_puts(b, gmt_api_name((enum gmt_api)ev->api));
	LIT(b, "\"");
	if (ev->driver) {
		LIT(b, ",\"driver\":\"");
		gmt_buf_puts(b, gmt_api_name((enum gmt_api)ev->driver));
		LIT(b, "\"");
	}
	if (ev->flags & GMT_EV_PTSZ)
		LIT(b, ",\"ptsz\":true");
	if (!reset) {
		LIT(b, ",\"kind\":\"");
		gmt_buf_puts(b, gmt_kind_name((enum gmt_kind)ev->kind));
		LIT(b, "\"");
	}
	LIT(b, ",\"device\":");
	buf_i64(b, ev->device);
	if (ev->context) {
		LIT(b, ",\"context\":");
		buf_u64(b, ev->context);
	}
	if (!reset && !usage) {
		LIT(b, ",\"stream\":");
		gmt_buf_hex(b, ev->stream);
		LIT(b, ",\"ptr\":");
		gmt_buf_hex(b, ev->ptr);
	}
	if (ev->op == GMT_OP_ALLOC || usage || (ev->op == GMT_OP_FREE && ev->size)) {
		/* frees carry a size only where the call names a range (cuMemUnmap,
		 * cuMemAddressFree) */
		LIT(b, ",\"size\":");
		buf_u64(b, ev->size);
	}
	if (ev->requested) {
		LIT(b, ",\"requested\":");
		buf_u64(b, ev->requested);
	}
	if (ev->flags & GMT_EV_HAS_FLAGS) {
		LIT(b, ",\"flags\":");
		buf_u64(b, ev->cuda_flags);
	}
	if (ev->flags & GMT_EV_HAS_POOL) {
		LIT(b, ",\"pool\":");
		gmt_buf_hex(b, ev->pool);
	}
	if (ev->handle) {
		LIT(b, ",\"handle\":");
		gmt_buf_hex(b, ev->handle);
	}
	if (ev->offset) {
		LIT(b, ",\"offset\":");
		buf_u64(b, ev->offset);
	}
	LIT(b, ",\"result\":");
	buf_i64(b, ev->result);
	if (ev->flags & GMT_EV_HAS_MEMINFO) {
		LIT(b, ",\"free_bytes\":");
		buf_u64(b, ev->free_bytes);
		LIT(b, ",\"total_bytes\":");
		buf_u64(b, ev->total_bytes);
	}
	LIT(b, ",\"stack\":");
	buf_u64(b, stack_id);
	LIT(b, "}\n");
}

void
gmt_jsonl_snapshot(struct gmt_buf *b,
		   uint64_t ts,
		   uint64_t seq,
		   uint64_t events,
		   uint64_t dropped,
		   const struct gmt_live_total *live,
		   size_t n_live,
		   const struct gmt_nvml_reading *nvml,
		   size_t n_nvml)
{
	LIT(b, "{\"type\":\"snapshot\",\"ts\":");
	buf_u64(b, ts);
	LIT(b, ",\"seq\":");
	buf_u64(b, seq);
	LIT(b, ",\"events\":");
	buf_u64(b, events);
	LIT(b, ",\"dropped\":");
	buf_u64(b, dropped);
	LIT(b, ",\"live\":[");
	for (size_t i = 0; i < n_live; i++) {
		if (i)
			LIT(b, ",");
		LIT(b, "{\"device\":");
		buf_i64(b, live[i].device);
		LIT(b, ",\"kind\":\"");
		gmt_buf_puts(b, gmt_kind_name(live[i].kind));
		LIT(b, "\",\"bytes\":");
		buf_u64(b, live[i].bytes);
		LIT(b, ",\"allocations\":");
		buf_u64(b, live[i].allocations);
		LIT(b, "}");
	}
	LIT(b, "]");
	if (n_nvml) {
		LIT(b, ",\"nvml\":[");
		for (size_t i = 0; i < n_nvml; i++) {
			if (i)
				LIT(b, ",");
			LIT(b, "{\"device\":");
			buf_i64(b, nvml[i].device);
			LIT(b, ",\"index\":");
			buf_u64(b, nvml[i].index);
			LIT(b, ",\"total\":");
			buf_u64(b, nvml[i].total);
			LIT(b, ",\"used\":");
			buf_u64(b, nvml[i].used);
			LIT(b, ",\"process_used\":");
			if (nvml[i].has_process_used)
				buf_u64(b, nvml[i].process_used);
			else
				LIT(b, "null");
			if (nvml[i].process_used_from) {
				LIT(b, ",\"process_used_from\":");
				gmt_buf_json_string(b, nvml[i].process_used_from,
						    strlen(nvml[i].process_used_from));
			}
			if (nvml[i].pid_namespace)
				LIT(b, ",\"pid_namespace\":true");
			LIT(b, "}");
		}
		LIT(b, "]");
	}
	LIT(b, "}\n");
}

/* An elided line's histogram: `[[bin, count(, bytes)], ...]` of its non-empty bins, after @p open
 * (the key and its bracket); @p bytes NULL: two columns. */
static void
bins(struct gmt_buf *b, const char *open, const uint64_t *count, const uint64_t *bytes)
{
	bool first = true;

	gmt_buf_puts(b, open);
	for (unsigned i = 0; i < GMT_ELIDED_BINS; i++) {
		if (!count[i])
			continue;
		gmt_buf_puts(b, first ? "[" : ",[");
		first = false;
		buf_u64(b, i);
		LIT(b, ",");
		buf_u64(b, count[i]);
		if (bytes) {
			LIT(b, ",");
			buf_u64(b, bytes[i]);
		}
		LIT(b, "]");
	}
	LIT(b, "]");
}

void
gmt_jsonl_elided(struct gmt_buf *b, const struct gmt_elided_site *s)
{
	LIT(b, "{\"type\":\"" GMT_ELIDED_TYPE "\",\"seq\":");
	buf_u64(b, s->seq);
	LIT(b, ",\"ts\":");
	buf_u64(b, s->ts);
	LIT(b, ",\"api\":\"");
	gmt_buf_puts(b, gmt_api_name((enum gmt_api)s->api));
	LIT(b, "\"");
	if (s->driver) {
		LIT(b, ",\"driver\":\"");
		gmt_buf_puts(b, gmt_api_name((enum gmt_api)s->driver));
		LIT(b, "\"");
	}
	LIT(b, ",\"kind\":\"");
	gmt_buf_puts(b, gmt_kind_name((enum gmt_kind)s->kind));
	LIT(b, "\",\"device\":");
	buf_i64(b, s->device);
	LIT(b, ",\"" GMT_ELIDED_ALLOCATIONS "\":");
	buf_u64(b, s->allocations);
	LIT(b, ",\"" GMT_ELIDED_BYTES "\":");
	buf_u64(b, s->bytes);
	LIT(b, ",\"" GMT_ELIDED_TEMPORARIES "\":");
	buf_u64(b, s->temporaries);
	LIT(b, ",\"" GMT_ELIDED_TEMPORARY_BYTES "\":");
	buf_u64(b, s->temporary_bytes);
	if (s->size_allocs)
		bins(b, ",\"" GMT_ELIDED_SIZES "\":[", s->size_allocs, s->size_bytes);
	if (s->lifetimes)
		bins(b, ",\"" GMT_ELIDED_LIFETIMES "\":[", s->lifetimes, NULL);
	LIT(b, ",\"stack\":");
	buf_u64(b, s->stack);
	LIT(b, "}\n");
}

void
gmt_jsonl_elided_blocks(struct gmt_buf *b, const struct gmt_elided_site *s)
{
	LIT(b, "{\"type\":\"" GMT_ELIDED_BLOCKS_TYPE "\",\"seq\":");
	buf_u64(b, s->seq);
	LIT(b, ",\"ts\":");
	buf_u64(b, s->ts);
	LIT(b, ",\"device\":");
	buf_i64(b, s->device);
	LIT(b, ",\"" GMT_ELIDED_ALLOCATIONS "\":");
	buf_u64(b, s->allocations);
	LIT(b, ",\"" GMT_ELIDED_BYTES "\":");
	buf_u64(b, s->bytes);
	LIT(b, ",\"stack\":");
	buf_u64(b, s->stack);
	LIT(b, "}\n");
}

static void
trailer_begin(
    struct gmt_buf *b, uint64_t ts, uint64_t events, uint64_t dropped, uint64_t dropped_readings)
{
	LIT(b, "{\"type\":\"trailer\",\"ts\":");
	buf_u64(b, ts);
	LIT(b, ",\"events\":");
	buf_u64(b, events);
	LIT(b, ",\"dropped\":");
	buf_u64(b, dropped);
	if (dropped_readings) {
		LIT(b, ",\"" GMT_TRAILER_DROPPED_READINGS "\":");
		buf_u64(b, dropped_readings);
	}
}

void
gmt_jsonl_trailer_bounded(struct gmt_buf *b,
			  uint64_t ts,
			  uint64_t events,
			  uint64_t dropped,
			  uint64_t dropped_readings,
			  const char *reason,
			  uint64_t elided,
			  uint64_t late,
			  uint64_t buckets)
{
	trailer_begin(b, ts, events, dropped, dropped_readings);
	LIT(b, ",\"" GMT_TRAILER_ELIDED "\":");
	buf_u64(b, elided);
	LIT(b, ",\"" GMT_TRAILER_LATE "\":");
	buf_u64(b, late);
	LIT(b, ",\"" GMT_TRAILER_BUCKETS "\":");
	buf_u64(b, buckets);
	LIT(b, ",\"reason\":");
	gmt_buf_json_string(b, reason, strlen(reason));
	LIT(b, "}\n");
}

void
gmt_jsonl_trailer(struct gmt_buf *b,
		  uint64_t ts,
		  uint64_t events,
		  uint64_t dropped,
		  uint64_t dropped_readings,
		  const char *reason)
{
	trailer_begin(b, ts, events, dropped, dropped_readings);
	LIT(b, ",\"reason\":");
	gmt_buf_json_string(b, reason, strlen(reason));
	LIT(b, "}\n");
}
