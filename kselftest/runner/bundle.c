// SPDX-License-Identifier: GPL-2.0
/*
 * Reading a case file of the bundle (conformance/ilaconf/kselftest/bundle.py
 * writes them and documents the keys): "key value" lines, a head, the named
 * frame sets, then one block per column from "column" to "end".
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

#define FORMAT "ila-kselftest-bundle 1"

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p) {
		fprintf(stderr, "ila_conformance: out of memory\n");
		exit(1);
	}
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s ? s : "");

	if (!p) {
		fprintf(stderr, "ila_conformance: out of memory\n");
		exit(1);
	}
	return p;
}

void strv_push(struct strv *s, const char *text)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 8;
		s->v = realloc(s->v, (size_t)s->cap * sizeof(*s->v));
		if (!s->v) {
			fprintf(stderr, "ila_conformance: out of memory\n");
			exit(1);
		}
	}
	s->v[s->n++] = xstrdup(text);
}

void strv_free(struct strv *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Hex text to bytes; -1 when it is not an even run of hex digits. */
static long unhex(const char *text, uint8_t **out)
{
	size_t n = strlen(text), i;
	uint8_t *b;

	if (n % 2)
		return -1;
	b = xcalloc(n / 2, 1);
	for (i = 0; i < n / 2; i++) {
		int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);

		if (hi < 0 || lo < 0) {
			free(b);
			return -1;
		}
		b[i] = (uint8_t)(hi << 4 | lo);
	}
	*out = b;
	return (long)(n / 2);
}

struct parser {
	const char *path;
	int line;
	char *err;
	size_t errlen;
};

static int bad(struct parser *p, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "%s:%d: %s", p->path, p->line, msg);
	return -1;
}

/* A control step's expectation keys; 1 when @key was one. */
static int expect_key(struct ks_expect *e, const char *key, const char *val,
		      int *stdout_left)
{
	if (!strcmp(key, "rc"))
		e->rc = atoi(val);
	else if (!strcmp(key, "stdout"))
		e->have_stdout = 1, *stdout_left = atoi(val);
	else if (!strcmp(key, "line"))
		strv_push(&e->stdout_lines, val), (*stdout_left)--;
	else if (!strcmp(key, "contains"))
		strv_push(&e->contains, val);
	else if (!strcmp(key, "match"))
		strv_push(&e->match, val);
	else if (!strcmp(key, "absent"))
		strv_push(&e->absent, val);
	else if (!strcmp(key, "json"))
		e->json = xstrdup(val);
	else
		return 0;
	return 1;
}

static int step_key(struct parser *p, struct ks_column *col, const char *key,
		    char *val, int *stdout_left)
{
	struct ks_step *s;

	if (!strcmp(key, "step")) {
		col->steps = realloc(col->steps, (size_t)(col->nsteps + 1) * sizeof(*s));
		if (!col->steps)
			return bad(p, "out of memory");
		s = &col->steps[col->nsteps++];
		memset(s, 0, sizeof(*s));
		s->run = xstrdup(val);
		s->timeout = 60;
		return 1;
	}
	if (!col->nsteps)
		return 0;
	s = &col->steps[col->nsteps - 1];
	if (!strcmp(key, "retry")) {
		s->retry = atof(val);
	} else if (!strcmp(key, "timeout")) {
		s->timeout = atoi(val);
	} else if (!strcmp(key, "respond")) {
		s->respond = xstrdup(val);
	} else if (!strcmp(key, "alt") || !strcmp(key, "stop")) {
		struct ks_expect *e = key[0] == 'a' ? &s->alt : &s->stop;
		char *sub = val, *rest = strchr(val, ' ');

		*(key[0] == 'a' ? &s->have_alt : &s->have_stop) = 1;
		if (rest)
			*rest++ = '\0';
		if (!expect_key(e, sub, rest ? rest : "", stdout_left))
			return bad(p, "unknown %s key '%s'", key, sub);
	} else {
		return expect_key(&s->want, key, val, stdout_left);
	}
	return 1;
}

static int column_key(struct parser *p, struct ks_case *c, struct ks_column *col,
		      const char *key, char *val, int *stdout_left)
{
	static const struct { const char *key; size_t off; } text[] = {
		{ "name", offsetof(struct ks_column, name) },
		{ "kernel", offsetof(struct ks_column, kernel) },
		{ "module", offsetof(struct ks_column, module) },
		{ "rival", offsetof(struct ks_column, rival) },
		{ "skip", offsetof(struct ks_column, skip) },
		{ "stats", offsetof(struct ks_column, stats) },
		{ "inject-error", offsetof(struct ks_column, inject_error) },
		{ "expect", offsetof(struct ks_column, expect) },
		{ "expect-missing", offsetof(struct ks_column, expect_missing) },
		{ "deviation", offsetof(struct ks_column, deviation) },
		{ "dev-route-error", offsetof(struct ks_column, dev_route_error) },
		{ "dev-inject-error", offsetof(struct ks_column, dev_inject_error) },
		{ "dev-expect", offsetof(struct ks_column, dev_expect) },
		{ "clone-deviation", offsetof(struct ks_column, clone_deviation) },
	};
	size_t i;
	int rc;

	for (i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
		if (strcmp(key, text[i].key))
			continue;
		*(char **)((char *)col + text[i].off) = xstrdup(val);
		if (!strcmp(key, "stats"))
			col->check_stats = 1;
		return 0;
	}
	(void)c;
	if (!strcmp(key, "setup") || !strcmp(key, "teardown") || !strcmp(key, "cleanup")) {
		strv_push(key[0] == 's' ? &col->setup : key[0] == 't' ? &col->teardown :
			  &col->cleanup, val);
		return 0;
	}
	rc = step_key(p, col, key, val, stdout_left);
	if (rc)
		return rc < 0 ? -1 : 0;
	return bad(p, "unknown column key '%s'", key);
}

static int head_key(struct parser *p, struct ks_case *c, const char *key, char *val)
{
	static const struct { const char *key; size_t off; } text[] = {
		{ "case", offsetof(struct ks_case, id) },
		{ "verifies", offsetof(struct ks_case, verifies) },
		{ "requirements", offsetof(struct ks_case, requirements) },
		{ "path", offsetof(struct ks_case, path) },
		{ "send", offsetof(struct ks_case, send) },
		{ "sock", offsetof(struct ks_case, sock) },
		{ "nic", offsetof(struct ks_case, nic) },
		{ "rx", offsetof(struct ks_case, rx) },
		{ "layout", offsetof(struct ks_case, layout) },
	};
	size_t i;
	long n;

	for (i = 0; i < sizeof(text) / sizeof(text[0]); i++) {
		if (!strcmp(key, text[i].key)) {
			*(char **)((char *)c + text[i].off) = xstrdup(val);
			return 0;
		}
	}
	if (!strcmp(key, "frame")) {
		n = unhex(val, &c->frame);
		if (n < 0)
			return bad(p, "frame is not hex");
		c->frame_len = (size_t)n;
	} else if (!strcmp(key, "mask")) {
		if (strcmp(val, "tcp-window"))
			return bad(p, "unknown mask '%s'", val);
		c->mask_tcp_window = 1;
	} else if (!strcmp(key, "flow")) {
		strv_push(&c->flow, val);
	} else {
		return bad(p, "unknown key '%s'", key);
	}
	return 0;
}

static int frameset_key(struct parser *p, struct ks_case *c, const char *key, char *val)
{
	struct ks_frameset *fs;
	struct ks_frame *f;
	long n;

	if (!strcmp(key, "frameset")) {
		char *count = strchr(val, ' ');

		if (!count)
			return bad(p, "frameset NAME COUNT");
		*count++ = '\0';
		c->sets = realloc(c->sets, (size_t)(c->nsets + 1) * sizeof(*fs));
		if (!c->sets)
			return bad(p, "out of memory");
		fs = &c->sets[c->nsets++];
		fs->name = xstrdup(val);
		fs->n = 0;
		fs->frames = xcalloc((size_t)atoi(count) + 1, sizeof(*f));
		return 0;
	}
	if (!c->nsets)
		return bad(p, "'%s' outside a frameset", key);
	fs = &c->sets[c->nsets - 1];
	if (!strcmp(key, "expected")) {
		f = &fs->frames[fs->n++];
		n = unhex(val, &f->data);
		if (n < 0)
			return bad(p, "expected frame is not hex");
		f->len = (size_t)n;
	} else if (!strcmp(key, "fields")) {
		if (!fs->n)
			return bad(p, "fields before a frame");
		fs->frames[fs->n - 1].fields = xstrdup(val);
	}
	return 0;
}

const struct ks_frameset *bundle_frameset(const struct ks_case *c, const char *name)
{
	int i;

	for (i = 0; name && i < c->nsets; i++)
		if (!strcmp(c->sets[i].name, name))
			return &c->sets[i];
	return NULL;
}

struct ks_case *bundle_read(const char *path, char *err, size_t errlen)
{
	struct parser p = { .path = path, .err = err, .errlen = errlen };
	struct ks_column *col = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	struct ks_case *c;
	int stdout_left = 0;
	FILE *f = fopen(path, "re");

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	c = xcalloc(1, sizeof(*c));
	c->file = xstrdup(path);
	while ((n = getline(&line, &cap, f)) >= 0) {
		char *key = line, *val;

		p.line++;
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (p.line == 1) {
			if (strcmp(line, FORMAT)) {
				bad(&p, "not a case bundle file (want '%s'): made by another "
				    "version of make kselftest?", FORMAT);
				goto fail;
			}
			continue;
		}
		val = strchr(line, ' ');
		if (val)
			*val++ = '\0';
		else
			val = line + n;
		if (!strcmp(key, "column")) {
			c->cols = realloc(c->cols, (size_t)(c->ncols + 1) * sizeof(*col));
			if (!c->cols)
				goto fail;
			col = &c->cols[c->ncols++];
			memset(col, 0, sizeof(*col));
			col->impl = xstrdup(val);
		} else if (!strcmp(key, "end")) {
			if (!col || stdout_left) {
				bad(&p, stdout_left ? "fewer 'line' lines than 'stdout' said"
						    : "'end' outside a column");
				goto fail;
			}
			col = NULL;
		} else if (col) {
			if (column_key(&p, c, col, key, val, &stdout_left))
				goto fail;
		} else if (!strcmp(key, "frameset") || !strcmp(key, "expected") ||
			   !strcmp(key, "fields")) {
			if (frameset_key(&p, c, key, val))
				goto fail;
		} else if (head_key(&p, c, key, val)) {
			goto fail;
		}
	}
	free(line);
	fclose(f);
	if (!c->id || !c->path || col) {
		snprintf(err, errlen, "%s: %s", path, col ? "a column has no 'end'"
						    : "no 'case' or 'path'");
		return NULL;
	}
	return c;
fail:
	free(line);
	fclose(f);
	return NULL;
}
