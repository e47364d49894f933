// SPDX-License-Identifier: GPL-2.0
/*
 * The JSON check of a control step (running/steps.py: json_subset): the
 * command's output is a JSON array, and each element of the step's array
 * must be a subset of one of its elements. A subset: every key of an object
 * present with a subset value, every element of a list a subset of some
 * element, and scalars equal. Enough of JSON for iproute2's -j output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runner.h"

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jval {
	enum jtype type;
	char *str;		/* J_STR; J_NUM and J_BOOL keep their text too */
	char **keys;		/* J_OBJ */
	struct jval **items;	/* J_ARR and J_OBJ values */
	int n;
};

struct jparser {
	const char *p;
	int bad;
};

static void skip_ws(struct jparser *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static struct jval *jnew(enum jtype t)
{
	struct jval *v = xcalloc(1, sizeof(*v));

	v->type = t;
	return v;
}

static char *parse_string(struct jparser *j)
{
	size_t cap = strlen(j->p) + 1, n = 0;
	char *out = xcalloc(cap, 1);

	j->p++;	/* the opening quote */
	while (*j->p && *j->p != '"') {
		char c = *j->p++;

		if (c == '\\') {
			c = *j->p++;
			switch (c) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u': {
				unsigned int code = 0;

				if (sscanf(j->p, "%4x", &code) != 1)
					j->bad = 1;
				j->p += 4;
				c = code < 0x80 ? (char)code : '?';
				break;
			}
			case '\0':
				j->bad = 1;
				return out;
			default: /* \" \\ \/ */
				break;
			}
		}
		out[n++] = c;
	}
	if (*j->p != '"')
		j->bad = 1;
	else
		j->p++;
	return out;
}

static struct jval *parse_value(struct jparser *j);

static void push(struct jval *v, struct jval *item, char *key)
{
	v->items = realloc(v->items, (size_t)(v->n + 1) * sizeof(*v->items));
	if (v->type == J_OBJ)
		v->keys = realloc(v->keys, (size_t)(v->n + 1) * sizeof(*v->keys));
	if (!v->items || (v->type == J_OBJ && !v->keys))
		exit(1);
	v->items[v->n] = item;
	if (v->type == J_OBJ)
		v->keys[v->n] = key;
	v->n++;
}

static struct jval *parse_container(struct jparser *j, enum jtype t)
{
	char close = t == J_ARR ? ']' : '}';
	struct jval *v = jnew(t);

	j->p++;
	skip_ws(j);
	if (*j->p == close) {
		j->p++;
		return v;
	}
	while (!j->bad) {
		char *key = NULL;

		skip_ws(j);
		if (t == J_OBJ) {
			if (*j->p != '"') {
				j->bad = 1;
				break;
			}
			key = parse_string(j);
			skip_ws(j);
			if (*j->p++ != ':') {
				j->bad = 1;
				break;
			}
		}
		push(v, parse_value(j), key);
		skip_ws(j);
		if (*j->p == ',') {
			j->p++;
			continue;
		}
		if (*j->p == close) {
			j->p++;
			break;
		}
		j->bad = 1;
	}
	return v;
}

static struct jval *parse_value(struct jparser *j)
{
	struct jval *v;
	size_t n;

	skip_ws(j);
	if (*j->p == '{')
		return parse_container(j, J_OBJ);
	if (*j->p == '[')
		return parse_container(j, J_ARR);
	if (*j->p == '"') {
		v = jnew(J_STR);
		v->str = parse_string(j);
		return v;
	}
	if (!strncmp(j->p, "null", 4)) {
		j->p += 4;
		return jnew(J_NULL);
	}
	n = strspn(j->p, "+-0123456789.eEtruefals");
	if (!n) {
		j->bad = 1;
		return jnew(J_NULL);
	}
	v = jnew(strchr("tf", *j->p) ? J_BOOL : J_NUM);
	v->str = xcalloc(n + 1, 1);
	memcpy(v->str, j->p, n);
	j->p += n;
	return v;
}

static void jfree(struct jval *v)
{
	int i;

	if (!v)
		return;
	for (i = 0; i < v->n; i++) {
		jfree(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

static int scalar_equal(const struct jval *a, const struct jval *b)
{
	if (a->type != b->type)
		return 0;
	if (a->type == J_NUM)
		return strtod(a->str, NULL) == strtod(b->str, NULL);
	return a->type == J_NULL || !strcmp(a->str, b->str);
}

static int subset(const struct jval *want, const struct jval *got)
{
	int i, k;

	if (want->type == J_OBJ) {
		if (got->type != J_OBJ)
			return 0;
		for (i = 0; i < want->n; i++) {
			for (k = 0; k < got->n; k++)
				if (!strcmp(want->keys[i], got->keys[k]))
					break;
			if (k == got->n || !subset(want->items[i], got->items[k]))
				return 0;
		}
		return 1;
	}
	if (want->type == J_ARR) {
		if (got->type != J_ARR)
			return 0;
		for (i = 0; i < want->n; i++) {
			for (k = 0; k < got->n; k++)
				if (subset(want->items[i], got->items[k]))
					break;
			if (k == got->n)
				return 0;
		}
		return 1;
	}
	return scalar_equal(want, got);
}

static struct jval *parse_all(const char *text, int *bad)
{
	struct jparser j = { .p = text };
	struct jval *v = parse_value(&j);

	skip_ws(&j);
	*bad = j.bad || *j.p;
	return v;
}

int json_subset_holds(const char *want, const char *got, char *why, size_t whylen)
{
	int bad_want, bad_got, i, ok = 1;
	struct jval *w = parse_all(want, &bad_want), *g = parse_all(got, &bad_got);

	if (bad_want || w->type != J_ARR) {
		snprintf(why, whylen, "the step's json is not a JSON array: %s", want);
		ok = 0;
	} else if (bad_got) {
		snprintf(why, whylen, "output is not JSON");
		ok = 0;
	}
	for (i = 0; ok && i < w->n; i++) {
		struct jval one = { .type = J_ARR, .items = &w->items[i], .n = 1 };

		if (!subset(&one, g)) {
			snprintf(why, whylen, "no JSON element holds element %d of %s", i, want);
			ok = 0;
		}
	}
	jfree(w);
	jfree(g);
	return ok;
}
