// SPDX-License-Identifier: GPL-2.0
/*
 * A case's command lines, run in the DUT's namespace: "ip ..." is the
 * machine's iproute2 (found on PATH), "ila-nl", "ila-map", "ila-sock" and
 * "ila-inject" are the collection's own tools, and insmod, rmmod, cat,
 * mode, write and dmesg are verbs (lib/verbs.h) that need no program.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../lib/leftovers.h"
#include "../../lib/verbs.h"
#include "runner.h"

static const char *const tools[] = { "ila-nl", "ila-map", "ila-sock", "ila-inject", "ila-churn" };

static int is_tool(const char *word)
{
	size_t i;

	for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
		if (!strcmp(word, tools[i]))
			return 1;
	return 0;
}

/* @name's path on PATH, in @buf; NULL when there is none. */
const char *which(const char *name, char *buf, size_t len)
{
	const char *path = getenv("PATH");
	char *copy = xstrdup(path ? path : "/usr/sbin:/usr/bin:/sbin:/bin"), *dir, *save;
	const char *found = NULL;

	for (dir = strtok_r(copy, ":", &save); dir && !found; dir = strtok_r(NULL, ":", &save)) {
		snprintf(buf, len, "%s/%s", dir, name);
		if (!access(buf, X_OK))
			found = buf;
	}
	free(copy);
	return found;
}

static void collect(void *ctx, const char *line)
{
	strv_push(ctx, line);
}

int run_line(const struct ks_env *env, const char *line, int timeout_s, struct strv *out)
{
	char *copy = xstrdup(line), **argv, *save, *w;
	char paths[2][512];
	int argc = 0, rc, i, wrapper;

	argv = xcalloc(strlen(line) / 2 + 2, sizeof(*argv));	/* at most one word per 2 chars */
	for (w = strtok_r(copy, " ", &save); w; w = strtok_r(NULL, " ", &save))
		argv[argc++] = w;
	argv[argc] = NULL;
	if (!argc) {
		free(argv);
		free(copy);
		strv_push(out, "empty command");
		return 2;
	}
	if (verb_known(argv[0]) && strcmp(argv[0], "exec")) {
		rc = verb_run(argv[0], argv + 1, timeout_s, collect, out);
		free(argv);
		free(copy);
		return rc;
	}
	/*
	 * Our tools run a command in turn (ila-nl as-nobody CMD, in-userns CMD,
	 * watch N CMD) with execv: a tool gets its path in the collection, and
	 * ip its path on the machine's PATH.
	 */
	wrapper = is_tool(argv[0]);
	for (i = 0; i < argc && i < 4; i++) {
		char *path = paths[i ? 1 : 0];

		if (is_tool(argv[i]) && (!i || wrapper))
			snprintf(path, sizeof(paths[0]), "%s/%s", env->tools_dir, argv[i]);
		else if (i && wrapper && !strcmp(argv[i], "ip") && which("ip", path, sizeof(paths[0])))
			;
		else
			continue;
		argv[i] = path;
	}
	rc = verb_run("exec", argv, timeout_s, collect, out);
	free(argv);
	free(copy);
	return rc;
}

/* 'ip route show' output, a multipath route's nexthop lines joined to it. */
static void route_entries(struct strv *lines, struct strv *entries)
{
	char buf[4096];
	int i;

	for (i = 0; i < lines->n; i++) {
		const char *l = lines->v[i];

		if ((l[0] == ' ' || l[0] == '\t') && entries->n) {
			snprintf(buf, sizeof(buf), "%s %s", entries->v[entries->n - 1],
				 l + strspn(l, " \t"));
			free(entries->v[entries->n - 1]);
			entries->v[entries->n - 1] = xstrdup(buf);
		} else {
			strv_push(entries, l);
		}
	}
}

static const char *const route_types[] = {
	"unicast", "local", "broadcast", "multicast", "throw", "unreachable",
	"prohibit", "blackhole", "nat", "anycast",
};

/* 'ip FAMILY route del [TYPE] PREFIX [table T]' for a shown route. */
static void route_delete(const struct ks_env *env, const char *family, const char *route)
{
	char cmd[512], *copy = xstrdup(route), *save, *first, *table;
	struct strv out = { 0 };
	size_t i;

	first = strtok_r(copy, " ", &save);
	snprintf(cmd, sizeof(cmd), "ip %s route del %s", family, first ? first : "");
	for (i = 0; first && i < sizeof(route_types) / sizeof(route_types[0]); i++) {
		if (!strcmp(first, route_types[i])) {
			char *prefix = strtok_r(NULL, " ", &save);

			snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " %s",
				 prefix ? prefix : "");
		}
	}
	table = strstr(route, " table ");
	if (table) {
		char name[64] = "";

		sscanf(table + 7, "%63s", name);
		snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " table %s", name);
	}
	run_line(env, cmd, 30, &out);
	strv_free(&out);
	free(copy);
}

int leftover_ila(const struct ks_env *env, int purge, struct strv *left)
{
	static const char *const families[] = { "-6", "-4" };
	size_t f;
	int i;

	if (ila_state_left() == 0)
		return 0;	/* the usual answer, without running ip */
	for (f = 0; f < 2; f++) {
		struct strv out = { 0 }, entries = { 0 };
		char cmd[64];

		snprintf(cmd, sizeof(cmd), "ip %s route show table all", families[f]);
		run_line(env, cmd, 30, &out);
		route_entries(&out, &entries);
		for (i = 0; i < entries.n; i++) {
			if (!strstr(entries.v[i], "encap ila"))
				continue;
			strv_push(left, entries.v[i]);
			if (purge)
				route_delete(env, families[f], entries.v[i]);
		}
		strv_free(&out);
		strv_free(&entries);
	}
	{
		/* the mapping table's entries, where the module has one */
		struct strv out = { 0 }, flush = { 0 };

		if (run_line(env, "ip ila list", 30, &out) == 0) {
			for (i = 0; i < out.n; i++)
				if (out.v[i][0])
					strv_push(left, out.v[i]);
			if (purge && out.n)
				run_line(env, "ila-map flush", 30, &flush);
		}
		strv_free(&out);
		strv_free(&flush);
	}
	return left->n;
}
