// SPDX-License-Identifier: GPL-2.0
/*
 * A packet case in one column: set up its routes with the machine's ip,
 * send its packet (the DUT sends it on the output path; the far side
 * otherwise, linear through the veth or laid out through a tap), capture
 * what comes out up to the fence, tear down, then judge as the host
 * harness does (conformance/ilaconf/running/session.py: judge_packet):
 *
 *   - the requirement: the send's status, the counters, and the case's own
 *     frames byte for byte against the golden capture;
 *   - a declared deviation is an XFAIL only when observed exactly, and a
 *     declared deviation that is not observed (the case passes) fails;
 *   - a cloned layout also needs the packet socket's copy intact.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../lib/rxtap.h"
#include "../../lib/send.h"
#include "runner.h"

#define TCP_WINDOW (14 + 40 + 14)
#define TCP_CHECKSUM (14 + 40 + 16)
#define MAX_STATS 64

struct observed {
	int rc;
	struct strv out;
	uint8_t **frames;
	size_t *lens;
	int n;
	long delta[MAX_STATS];
	char name[MAX_STATS][64];
	int nstats;
};

static void joined(const struct strv *s, char *buf, size_t len)
{
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < s->n && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? " | " : "",
					 s->v[i]);
	if (!s->n)
		snprintf(buf, len, "(no output)");
}

static int contains(const struct strv *s, const char *text)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (strstr(s->v[i], text))
			return 1;
	return 0;
}

/* "OFF=HEX OFF=HEX": every byte run at its offset. */
static int flow_group_holds(const char *group, const uint8_t *f, size_t len)
{
	char *copy = xstrdup(group), *save, *w;
	int ok = 1;

	for (w = strtok_r(copy, " ", &save); w && ok; w = strtok_r(NULL, " ", &save)) {
		char *hex = strchr(w, '=');
		size_t off = strtoul(w, NULL, 10), i, n;

		if (!hex)
			break;
		hex++;
		n = strlen(hex) / 2;
		if (off + n > len) {
			ok = 0;
			break;
		}
		for (i = 0; i < n && ok; i++) {
			unsigned int b;

			sscanf(hex + 2 * i, "%2x", &b);
			ok = f[off + i] == b;
		}
	}
	free(copy);
	return ok;
}

static int in_flow(const struct ks_case *c, const uint8_t *f, size_t len)
{
	int i;

	for (i = 0; i < c->flow.n; i++)
		if (flow_group_holds(c->flow.v[i], f, len))
			return 1;
	return 0;
}

/* The case's own frames, in NIC order, as the harness lists them. */
static void keep_flow(const struct ks_case *c, struct ks_capture *cap, struct observed *o)
{
	int i, j;

	for (i = 0; i < KS_MAX_NICS; i++) {
		for (j = 0; j < cap->n[i]; j++) {
			if (!in_flow(c, cap->frame[i][j], cap->len[i][j]))
				continue;
			o->frames = realloc(o->frames, (size_t)(o->n + 1) * sizeof(*o->frames));
			o->lens = realloc(o->lens, (size_t)(o->n + 1) * sizeof(*o->lens));
			if (!o->frames || !o->lens)
				exit(1);
			o->frames[o->n] = cap->frame[i][j];
			o->lens[o->n++] = cap->len[i][j];
			cap->frame[i][j] = NULL;
		}
	}
}

/* /proc/net/ila_ref_stats of the DUT's namespace: "name value" lines. */
static int read_stats(char names[][64], long *values, int max)
{
	FILE *f = fopen("/proc/net/ila_ref_stats", "re");
	char name[64];
	long value;
	int n = 0;

	if (!f)
		return -1;
	while (n < max && fscanf(f, "%63s %ld", name, &value) == 2) {
		snprintf(names[n], 64, "%s", name);
		values[n++] = value;
	}
	fclose(f);
	return n;
}

static const char *field_at(const char *fields, size_t at, size_t *start, size_t *len,
			    char *name, size_t namelen)
{
	const char *p = fields;

	while (p && *p) {
		size_t o, l;
		int used = 0;

		if (sscanf(p, "%zu:%zu:%n", &o, &l, &used) != 2)
			break;
		if (at >= o && at < o + l) {
			size_t n = strcspn(p + used, " ");

			snprintf(name, namelen, "%.*s", (int)n, p + used);
			*start = o;
			*len = l;
			return name;
		}
		p = strchr(p, ' ');
		p = p ? p + 1 : NULL;
	}
	snprintf(name, namelen, "frame bytes");
	*start = at;
	*len = 1;
	return name;
}

static void hex(char *buf, size_t cap, const uint8_t *p, size_t n, size_t max)
{
	size_t i, used = 0;

	buf[0] = '\0';
	for (i = 0; i < n && i < max && used + 3 < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%02x", p[i]);
	if (n > max)
		snprintf(buf + used, cap - used, "...");
}

/* Each field that differs, expected against observed, in Wireshark's names. */
static void diff_fields(struct ks_result *v, int i, const struct ks_frame *want,
			const uint8_t *got, size_t got_len)
{
	size_t at = 0, start, len, min = want->len < got_len ? want->len : got_len;
	char name[128], e[80], o[80];
	int shown = 0, first = 1;

	while (at < min && shown < 8) {
		if (want->data[at] == got[at]) {
			at++;
			continue;
		}
		field_at(want->fields, at, &start, &len, name, sizeof(name));
		if (start + len > min)
			len = min - start;
		hex(e, sizeof(e), want->data + start, len, 32);
		hex(o, sizeof(o), got + start, len, 32);
		if (first)
			result_diag(v, "frame %d: first difference at byte %zu, in %s", i, at, name);
		result_diag(v, "  %-40s expected %-34s observed %s", name, e, o);
		first = 0;
		shown++;
		at = start + len;
	}
	if (want->len != got_len)
		result_diag(v, "frame %d: %zu bytes expected, %zu observed", i, want->len, got_len);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/*
 * Kernel-built TCP: the window is the machine's (its memory sizes the
 * buffers), not the golden capture's. The expected frame takes the
 * observed window, and its checksum moves by the change (RFC 1624 eqn. 3),
 * so every other byte, the checksum included, is still compared.
 */
static void take_window(uint8_t *want, size_t len, const uint8_t *got, size_t got_len)
{
	uint32_t sum;
	uint16_t old, new;

	if (len < TCP_CHECKSUM + 2 || got_len < TCP_CHECKSUM + 2 || want[20] != 6 ||
	    get16(want + 12) != 0x86dd)
		return;
	old = get16(want + TCP_WINDOW);
	new = get16(got + TCP_WINDOW);
	sum = (uint16_t)~get16(want + TCP_CHECKSUM);
	sum += (uint16_t)~old;
	sum += new;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	put16(want + TCP_WINDOW, new);
	put16(want + TCP_CHECKSUM, (uint16_t)~sum);
}

static void frames_verdict(const struct ks_case *c, const struct ks_frameset *fs,
			   const struct observed *o, struct ks_result *v)
{
	int i;

	if (o->n != fs->n) {
		result_set(v, KS_FAIL, "expected %d frame(s) of the flow, captured %d", fs->n, o->n);
		for (i = 0; i < o->n; i++) {
			char h[2 * 96 + 4];

			hex(h, sizeof(h), o->frames[i], o->lens[i], 96);
			result_diag(v, "captured frame %d: %s", i, h);
		}
		return;
	}
	for (i = 0; i < fs->n; i++) {
		struct ks_frame want = fs->frames[i];
		uint8_t *copy = xcalloc(want.len, 1);

		memcpy(copy, want.data, want.len);
		want.data = copy;
		if (c->mask_tcp_window)
			take_window(copy, want.len, o->frames[i], o->lens[i]);
		if (want.len != o->lens[i] || memcmp(copy, o->frames[i], want.len)) {
			result_set(v, KS_FAIL, "frame %d differs from the expected frame%s", i,
			    c->mask_tcp_window ? " (the TCP window taken from the frame)" : "");
			diff_fields(v, i, &want, o->frames[i], o->lens[i]);
			free(copy);
			return;
		}
		free(copy);
	}
}

static void stats_verdict(const char *want_text, const struct observed *o, struct ks_result *v)
{
	char *copy = xstrdup(want_text), *save, *w;
	long want[MAX_STATS] = { 0 };
	int i, bad = 0, unknown = 0;

	if (o->nstats < 0) {
		result_set(v, KS_FAIL, "no /proc/net/ila_ref_stats in the DUT's namespace");
		free(copy);
		return;
	}
	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(w, '=');

		if (!eq)
			continue;
		*eq = '\0';
		for (i = 0; i < o->nstats && strcmp(o->name[i], w); i++)
			;
		if (i == o->nstats)
			unknown = 1, result_diag(v, "unknown counter %s", w);
		else
			want[i] = atol(eq + 1);
	}
	free(copy);
	for (i = 0; i < o->nstats; i++)
		bad |= want[i] != o->delta[i];
	if (!bad && !unknown)
		return;
	result_set(v, KS_FAIL, "/proc/net/ila_ref_stats counters differ");
	for (i = 0; i < o->nstats; i++)
		result_diag(v, "%-28s expected +%-4ld observed +%ld%s", o->name[i], want[i],
		     o->delta[i], want[i] == o->delta[i] ? "" : "  <>");
}

/* session.verdict: the send, the counters, then the frames. */
static void verdict(const struct ks_case *c, const struct ks_frameset *fs,
		    const char *inject_error, const char *stats, const struct observed *o,
		    struct ks_result *v)
{
	char out[1024];

	v->status = KS_PASS;
	joined(&o->out, out, sizeof(out));
	if (inject_error) {
		if (o->rc == 0 || !contains(&o->out, inject_error)) {
			result_set(v, KS_FAIL, "expected the send to fail with '%s', it returned %d: %s",
			    inject_error, o->rc, out);
			return;
		}
	} else if (o->rc) {
		result_set(v, KS_FAIL, "the send failed (%d): %s", o->rc, out);
		return;
	}
	if (stats) {
		stats_verdict(stats, o, v);
		if (v->status != KS_PASS)
			return;
	}
	frames_verdict(c, fs, o, v);
}

static int cloned(const struct ks_case *c)
{
	return c->layout && strstr(c->layout, "clone=1");
}

/* session.with_clone: the packet socket's copy of a cloned layout. */
static void with_clone(const struct ks_case *c, const struct ks_column *col,
		       const struct observed *o, struct ks_result *v, int dev)
{
	const char *seen = "clone: no report";
	int i;

	if (!cloned(c) || v->status == KS_FAIL)
		return;
	for (i = 0; i < o->out.n; i++)
		if (!strncmp(o->out.v[i], "clone: ", 7))
			seen = o->out.v[i];
	if (!strcmp(seen, "clone: intact")) {
		if (col->clone_deviation)
			result_set(v, KS_FAIL, "the declared deviation (%s) was not observed: the "
			    "packet socket's copy is intact; remove it", col->clone_deviation);
		return;
	}
	if (col->clone_deviation && !strncmp(seen, "clone: modified", 15)) {
		if (v->status == KS_PASS && !dev) {
			result_set(v, KS_XFAIL, "%s", col->clone_deviation);
			result_diag(v, "%s", seen);
		} else {
			char was[1024];

			snprintf(was, sizeof(was), "%s", v->detail);
			result_set(v, v->status, "%s%s%s", was, was[0] ? "; " : "", col->clone_deviation);
			result_diag(v, "%s", seen);
		}
		return;
	}
	result_set(v, KS_FAIL, "the skb was shared with a packet socket, and its copy was written: "
	    "%s [breaks ILA-SHARED-1]", seen + 7);
	result_diag(v, "an implementation must make the skb's data its own (skb_ensure_writable) "
	     "before it writes into it");
}

static void teardown(const struct ks_env *env, const struct ks_column *col)
{
	int i;

	for (i = 0; i < col->teardown.n; i++) {
		struct strv out = { 0 };

		run_line(env, col->teardown.v[i], 30, &out);
		strv_free(&out);
	}
}

static void collect(void *ctx, const char *line)
{
	strv_push(ctx, line);
}

/* The case's packet, from the DUT or from the far side; the frames that came out. */
static int send_and_capture(struct ks_topology *t, struct ks_env *env,
			    const struct ks_case *c, struct observed *o, char *err,
			    size_t errlen)
{
	struct ks_capture cap = { 0 };
	char why[512];
	int rc = 0, nic;

	if (!strcmp(c->path, "output")) {
		char *copy = xstrdup(c->sock ? c->sock : ""), *argv[64], *save, *w;
		struct send_opts opts;
		struct pkt_spec spec;
		int argc = 0;

		for (w = strtok_r(copy, " ", &save); w && argc < 63; w = strtok_r(NULL, " ", &save))
			argv[argc++] = w;
		if (send_parse(argc, argv, &spec, &opts, why, sizeof(why))) {
			snprintf(err, errlen, "the case's packet: %s", why);
			free(copy);
			return -1;
		}
		free(copy);
		o->rc = send_packet(c->send, &spec, &opts, why, sizeof(why));
		if (o->rc)
			strv_push(&o->out, why);
		rc = wire_until_mark(t, ++env->fence, &cap, err, errlen);
	} else {
		nic = topology_nic(t, c->rx);
		if (nic < 0 || !c->frame) {
			snprintf(err, errlen, "the case names no frame, or no NIC %s", c->rx);
			return -1;
		}
		if (c->layout) {
			struct rxtap_opts ro = { 0 };
			char *copy = xstrdup(c->layout), *save, *w;
			uint8_t *frame = xcalloc(c->frame_len, 1);

			for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
				if (rxtap_option(w, &ro, why, sizeof(why)) <= 0) {
					snprintf(err, errlen, "layout: %s", why);
					free(copy);
					free(frame);
					return -1;
				}
			free(copy);
			memcpy(frame, c->frame, c->frame_len);
			o->rc = rxtap_deliver(&ro, frame, c->frame_len, collect, &o->out, why,
					      sizeof(why));
			if (o->rc)
				strv_push(&o->out, why);
			free(frame);
		} else if (wire_inject(t, nic, c->frame, c->frame_len, err, errlen)) {
			return -1;
		}
		/*
		 * The fence follows the packet on its NIC. GRO may hold a TCP
		 * segment without PSH until the end of the poll that received it,
		 * after the fence's reply: a second fence comes in a later poll.
		 */
		rc = wire_until_fence(t, nic, ++env->fence, &cap, err, errlen);
		if (!rc)
			rc = wire_until_fence(t, nic, ++env->fence, &cap, err, errlen);
	}
	if (!rc)
		keep_flow(c, &cap, o);
	capture_free(&cap);
	return rc;
}

static void observed_free(struct observed *o)
{
	int i;

	for (i = 0; i < o->n; i++)
		free(o->frames[i]);
	free(o->frames);
	free(o->lens);
	strv_free(&o->out);
}

static void take(struct ks_result *r, struct ks_result *v)
{
	int i;

	r->status = v->status;
	snprintf(r->detail, sizeof(r->detail), "%s", v->detail);
	for (i = 0; i < v->diag.n; i++)
		strv_push(&r->diag, v->diag.v[i]);
	strv_free(&v->diag);
}

void packet_run(struct ks_topology *t, struct ks_env *env, const struct ks_case *c,
		const struct ks_column *col, struct ks_result *r)
{
	static const struct ks_frameset none = { .name = "none" };
	const struct ks_frameset *want = bundle_frameset(c, col->expect);
	char names[MAX_STATS][64], err[1024], out[1024];
	struct observed o = { 0 };
	struct ks_result v = { 0 }, alt = { 0 };
	struct strv left = { 0 };
	long before[MAX_STATS];
	int i, nbefore = -1;

	if (col->expect_missing || !want) {
		result_set(r, KS_FAIL, "%s", col->expect_missing ? col->expect_missing
			   : "the bundle names no expected frames");
		return;
	}
	for (i = 0; i < col->setup.n; i++) {
		struct strv lines = { 0 };
		int rc = run_line(env, col->setup.v[i], 30, &lines);

		if (!rc) {
			strv_free(&lines);
			continue;
		}
		joined(&lines, out, sizeof(out));
		strv_free(&lines);
		teardown(env, col);
		leftover_ila(env, 1, &left);
		strv_free(&left);
		if (col->dev_route_error && strstr(out, col->dev_route_error)) {
			result_set(r, KS_XFAIL, "%s", col->deviation);
			result_diag(r, "route set-up refused as declared: %s", out);
			return;
		}
		result_set(r, KS_FAIL, "route set-up failed (%d): %s: %s", rc, col->setup.v[i], out);
		if (col->dev_route_error)
			result_diag(r, "declared deviation expects: %s", col->dev_route_error);
		return;
	}
	wire_drain(t);
	if (col->check_stats)
		nbefore = read_stats(names, before, MAX_STATS);
	if (send_and_capture(t, env, c, &o, err, sizeof(err))) {
		teardown(env, col);
		leftover_ila(env, 1, &left);
		strv_free(&left);
		result_set(r, KS_FAIL, "%s", err);
		observed_free(&o);
		return;
	}
	o.nstats = -1;
	if (col->check_stats && nbefore >= 0) {
		char now_names[MAX_STATS][64];
		long now[MAX_STATS];
		int n = read_stats(now_names, now, MAX_STATS), j;

		o.nstats = n < 0 ? -1 : n;
		for (i = 0; i < n; i++) {
			snprintf(o.name[i], sizeof(o.name[i]), "%s", now_names[i]);
			for (j = 0; j < nbefore && strcmp(names[j], now_names[i]); j++)
				;
			o.delta[i] = now[i] - (j < nbefore ? before[j] : 0);
		}
	}
	teardown(env, col);
	if (leftover_ila(env, 1, &left)) {
		joined(&left, out, sizeof(out));
		result_set(r, KS_FAIL, "ILA routes left after the teardown: %s", out);
		strv_free(&left);
		observed_free(&o);
		return;
	}

	verdict(c, want, col->inject_error, col->check_stats ? col->stats : NULL, &o, &v);
	with_clone(c, col, &o, &v, col->deviation != NULL);
	if (!col->deviation) {
		take(r, &v);
		observed_free(&o);
		return;
	}
	if (v.status == KS_PASS) {
		result_set(r, KS_FAIL, "the declared deviation (%s) was not observed: the case "
			   "passes", col->deviation);
		strv_free(&v.diag);
		observed_free(&o);
		return;
	}
	if (col->dev_route_error) {
		result_set(&alt, KS_FAIL, "the route was accepted, not refused with '%s'",
		    col->dev_route_error);
	} else {
		const struct ks_frameset *dev = bundle_frameset(c, col->dev_expect);

		verdict(c, dev ? dev : &none, col->dev_inject_error, NULL, &o, &alt);
		if (alt.status == KS_PASS)
			with_clone(c, col, &o, &alt, 0);
	}
	if (alt.status == KS_PASS || alt.status == KS_XFAIL) {
		result_set(r, KS_XFAIL, "%s%s%s", col->deviation,
			   alt.status == KS_XFAIL ? "; " : "",
			   alt.status == KS_XFAIL ? alt.detail : "");
		result_diag(r, "instead of the requirement: %s", v.detail);
	} else {
		result_set(r, KS_FAIL, "%s", v.detail);
		for (i = 0; i < v.diag.n; i++)
			strv_push(&r->diag, v.diag.v[i]);
		result_diag(r, "nor the declared deviation (%s): %s", col->deviation, alt.detail);
		for (i = 0; i < alt.diag.n; i++)
			strv_push(&r->diag, alt.diag.v[i]);
	}
	strv_free(&v.diag);
	strv_free(&alt.diag);
	observed_free(&o);
}
