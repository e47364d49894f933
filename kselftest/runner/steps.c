// SPDX-License-Identifier: GPL-2.0
/*
 * A control-plane case in one column: each step's command in the DUT's
 * namespace, its status and output checked as the host harness checks them
 * (conformance/ilaconf/running/steps.py). The first step that differs fails
 * the case, unless it gives what the column's declared deviation says,
 * which is then an XFAIL; a declared deviation that no step needed fails.
 * The cleanup runs whatever happened, and no ILA route may be left.
 *
 * {module} and {other_module} are module files, which only the machine
 * knows (--module, --rival-module): a case that needs them is a SKIP
 * without. A step that needs the far side to answer (respond = ...) is a
 * SKIP too: the far side here is packet sockets, not a network.
 */
#include <net/if.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runner.h"

/* What only the running system knows (control.RUNTIME_PLACEHOLDERS). */
struct names {
	const char *module, *module_name, *other_module, *other_module_name;
	char dev_ifindex[16], dev2_ifindex[16];
};

#define NAMES 6

/* @text with the runtime placeholders replaced; the caller frees it. */
static char *resolve(const char *text, const struct names *nm)
{
	static const char *const keys[NAMES] = {
		"{module}", "{module_name}", "{other_module}", "{other_module_name}",
		"{dev_ifindex}", "{dev2_ifindex}",
	};
	const char *vals[NAMES] = { nm->module, nm->module_name, nm->other_module,
				    nm->other_module_name, nm->dev_ifindex, nm->dev2_ifindex };
	size_t cap = strlen(text) + 1, used = 0, k;
	char *out = xcalloc(cap, 1);
	const char *p = text;

	while (*p) {
		for (k = 0; k < NAMES; k++)
			if (!strncmp(p, keys[k], strlen(keys[k])))
				break;
		if (k < NAMES) {
			const char *v = vals[k] ? vals[k] : "";

			cap += strlen(v);
			out = realloc(out, cap);
			if (!out)
				exit(1);
			memcpy(out + used, v, strlen(v));
			used += strlen(v);
			p += strlen(keys[k]);
		} else {
			out[used++] = *p++;
		}
	}
	out[used] = '\0';
	return out;
}

static int regex_any(const char *ere, const struct strv *out, int *bad_regex)
{
	regex_t re;
	int i, hit = 0;

	if (regcomp(&re, ere, REG_EXTENDED | REG_NOSUB)) {
		*bad_regex = 1;
		return 0;
	}
	for (i = 0; i < out->n && !hit; i++)
		hit = !regexec(&re, out->v[i], 0, NULL, 0);
	regfree(&re);
	return hit;
}

static void problem(struct strv *bad, const char *fmt, const char *a, const char *b)
{
	char line[2048];

	snprintf(line, sizeof(line), fmt, a, b);
	strv_push(bad, line);
}

/* What differs from @e; none when the step holds. */
static void check(const struct ks_expect *e, const struct names *nm, int rc,
		  const struct strv *out, struct strv *bad)
{
	char a[32], b[32], why[512];
	int i, j, bad_regex = 0;

	if (rc != e->rc) {
		snprintf(a, sizeof(a), "%d", e->rc);
		snprintf(b, sizeof(b), "%d", rc);
		problem(bad, "status: expected %s, observed %s", a, b);
	}
	if (e->have_stdout) {
		int n = out->n > e->stdout_lines.n ? out->n : e->stdout_lines.n, same = out->n ==
			e->stdout_lines.n;

		for (i = 0; same && i < out->n; i++) {
			char *want = resolve(e->stdout_lines.v[i], nm);

			same = !strcmp(want, out->v[i]);
			free(want);
		}
		if (!same) {
			strv_push(bad, "output differs (expected | observed):");
			for (i = 0; i < n; i++) {
				char *want = i < e->stdout_lines.n ?
					resolve(e->stdout_lines.v[i], nm) : xstrdup("(none)");
				const char *got = i < out->n ? out->v[i] : "(none)";

				problem(bad, "  '%s'", want, NULL);
				problem(bad, strcmp(want, got) ? "  '%s'  <>" : "  '%s'", got, NULL);
				free(want);
			}
		}
	}
	for (i = 0; i < e->contains.n; i++) {
		char *want = resolve(e->contains.v[i], nm);

		for (j = 0; j < out->n && strcmp(out->v[j], want); j++)
			;
		if (j == out->n)
			problem(bad, "missing line: %s", want, NULL);
		free(want);
	}
	for (i = 0; i < e->match.n; i++) {
		char *want = resolve(e->match.v[i], nm);

		if (!regex_any(want, out, &bad_regex))
			problem(bad, bad_regex ? "bad regex: %s" : "no line matches: %s", want, NULL);
		free(want);
	}
	for (i = 0; i < e->absent.n; i++) {
		char *want = resolve(e->absent.v[i], nm);
		struct strv one = { 0 };

		for (j = 0; j < out->n; j++) {
			strv_push(&one, out->v[j]);
			if (regex_any(want, &one, &bad_regex))
				problem(bad, "unexpected line: %s", out->v[j], NULL);
			strv_free(&one);
		}
		if (bad_regex)
			problem(bad, "bad regex: %s", want, NULL);
		free(want);
	}
	if (e->json) {
		size_t len = 1;
		char *text, *want = resolve(e->json, nm);

		for (i = 0; i < out->n; i++)
			len += strlen(out->v[i]) + 1;
		text = xcalloc(len, 1);
		for (i = 0; i < out->n; i++) {
			strcat(text, out->v[i]);
			strcat(text, "\n");
		}
		if (!json_subset_holds(want, text, why, sizeof(why)))
			problem(bad, "%s", why, NULL);
		free(text);
		free(want);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void diag_all(struct ks_result *r, const struct strv *lines)
{
	int i;

	for (i = 0; i < lines->n; i++)
		strv_push(&r->diag, lines->v[i]);
}

static int mentions(const struct ks_column *col, const char *text)
{
	int i;

	for (i = 0; i < col->nsteps; i++)
		if (strstr(col->steps[i].run, text))
			return 1;
	for (i = 0; i < col->cleanup.n; i++)
		if (strstr(col->cleanup.v[i], text))
			return 1;
	return 0;
}

/*
 * A program a step runs in another namespace ("ip netns exec NS PROGRAM",
 * nft for instance) that the machine lacks: the case needs it. 0 when none.
 */
static int missing_program(const struct ks_column *col, char *name, size_t len)
{
	char path[512];
	int i;

	for (i = 0; i < col->nsteps; i++) {
		const char *at = strstr(col->steps[i].run, "ip netns exec ");
		char ns[64], prog[64];

		if (at != col->steps[i].run ||
		    sscanf(at + strlen("ip netns exec "), "%63s %63s", ns, prog) != 2 ||
		    strchr(prog, '/') || which(prog, path, sizeof(path)))
			continue;
		snprintf(name, len, "%s", prog);
		return 1;
	}
	return 0;
}

/*
 * A module's name: its file's (ila_m0042.ko loads as ila_m0042: a mutant, or
 * an external module, judged as the column the bundle names), else the
 * column's. Returns a static buffer.
 */
static const char *module_name(const char *path, const char *column_module)
{
	static char names[2][64];
	static int which;
	const char *base = path ? strrchr(path, '/') : NULL;
	char *name = names[which++ % 2];

	if (!path)
		return column_module;
	snprintf(name, sizeof(names[0]), "%s", base ? base + 1 : path);
	name[strcspn(name, ".")] = '\0';
	return name;
}

static void run_steps(struct ks_env *env, const struct ks_column *col,
		      const struct names *nm, struct ks_result *r)
{
	struct timespec pause = { 0, 200 * 1000 * 1000 };
	int n, deviated = 0, has_stop = 0;

	for (n = 0; n < col->nsteps; n++) {
		const struct ks_step *s = &col->steps[n];
		struct strv out = { 0 }, bad = { 0 }, alt_bad = { 0 };
		char *line = resolve(s->run, nm);
		double deadline = now_s() + s->retry;
		int rc, done;

		has_stop |= s->have_stop;
		for (;;) {
			strv_free(&out);
			strv_free(&bad);
			strv_free(&alt_bad);
			rc = run_line(env, line, s->timeout, &out);
			check(&s->want, nm, rc, &out, &bad);
			if (s->have_alt && bad.n)
				check(&s->alt, nm, rc, &out, &alt_bad);
			else
				strv_push(&alt_bad, "no deviation");
			if (!bad.n || !alt_bad.n || now_s() >= deadline)
				break;
			nanosleep(&pause, NULL);
		}
		if (bad.n && s->have_stop) {
			struct strv stop_bad = { 0 };

			check(&s->stop, nm, rc, &out, &stop_bad);
			if (!stop_bad.n) {
				result_set(r, KS_XFAIL, "%s", col->deviation ? col->deviation : "");
				result_diag(r, "stopped at step %d as declared", n + 1);
			} else {
				result_set(r, KS_FAIL, "step %d: %s", n + 1, line);
				diag_all(r, &bad);
				result_diag(r, "nor does it stop as the declared deviation says:");
				diag_all(r, &stop_bad);
				result_diag(r, "output:");
				diag_all(r, &out);
			}
			strv_free(&stop_bad);
		} else if (bad.n && alt_bad.n) {
			result_set(r, KS_FAIL, "step %d: %s", n + 1, line);
			diag_all(r, &bad);
			if (s->have_alt) {
				result_diag(r, "declared deviation for this column:");
				diag_all(r, &alt_bad);
			}
			result_diag(r, "output:");
			diag_all(r, &out);
		}
		done = bad.n && (s->have_stop || alt_bad.n);
		deviated += bad.n && !done;
		strv_free(&out);
		strv_free(&alt_bad);
		strv_free(&bad);
		free(line);
		if (done)
			return;
	}
	if (col->deviation && !deviated)
		result_set(r, KS_FAIL, "the declared deviation (%s) was not observed: %s",
			   col->deviation, has_stop ? "the step it stops at holds" : "every step holds");
	else if (col->deviation)
		result_set(r, KS_XFAIL, "%s", col->deviation);
	else
		result_set(r, KS_PASS, "%s", "");
}

/* After the case: no ILA route left, and the column's module (only) loaded. */
static void restore(struct ks_env *env, const struct ks_column *col, const struct names *nm,
		    struct ks_result *r)
{
	struct strv left = { 0 }, mods = { 0 }, out = { 0 };
	char want[96], rival[96];
	int i, have = 0, other = 0;

	if (leftover_ila(env, 1, &left)) {
		result_set(r, KS_FAIL, "ILA routes left after the cleanup: %s", left.v[0]);
		diag_all(r, &left);
	}
	strv_free(&left);
	if (!env->module_path || !col->module)
		return;
	run_line(env, "cat /proc/modules", 10, &mods);
	snprintf(want, sizeof(want), "%s ", nm->module_name);
	snprintf(rival, sizeof(rival), "%s ", nm->other_module_name ? nm->other_module_name : "");
	for (i = 0; i < mods.n; i++) {
		have |= !strncmp(mods.v[i], want, strlen(want));
		other |= nm->other_module_name && !strncmp(mods.v[i], rival, strlen(rival));
	}
	strv_free(&mods);
	if (have && !other)
		return;
	result_set(r, KS_FAIL, "the cleanup did not restore the modules: %s %s, %s %s",
		   nm->module_name, have ? "loaded" : "not loaded",
		   nm->other_module_name ? nm->other_module_name : "-",
		   other ? "loaded" : "not loaded");
	if (other) {
		snprintf(want, sizeof(want), "rmmod %s", nm->other_module_name);
		run_line(env, want, 10, &out);
	}
	if (!have) {
		snprintf(want, sizeof(want), "insmod %s", env->module_path);
		run_line(env, want, 10, &out);
	}
	strv_free(&out);
}

void steps_run(struct ks_topology *t, struct ks_env *env, const struct ks_case *c,
	       const struct ks_column *col, struct ks_result *r)
{
	struct names nm = {
		.module = env->module_path, .module_name = module_name(env->module_path, col->module),
		.other_module = env->rival_path,
		.other_module_name = module_name(env->rival_path, col->rival),
	};
	struct strv out = { 0 };
	char *line, missing[64];
	int i;

	(void)c;
	snprintf(nm.dev_ifindex, sizeof(nm.dev_ifindex), "%u", if_nametoindex(t->nic[0].dev));
	snprintf(nm.dev2_ifindex, sizeof(nm.dev2_ifindex), "%u",
		 t->nnics > 1 ? if_nametoindex(t->nic[1].dev) : 0);
	for (i = 0; i < col->nsteps; i++) {
		if (col->steps[i].respond) {
			result_set(r, KS_SKIP, "needs the far side to answer (step %d: respond = %s): "
				   "the host harness's make conformance runs it", i + 1,
				   col->steps[i].respond);
			return;
		}
	}
	if (missing_program(col, missing, sizeof(missing))) {
		result_set(r, KS_SKIP, "needs %s, which is not on PATH", missing);
		return;
	}
	if ((mentions(col, "{module}") && !env->module_path) ||
	    (mentions(col, "{other_module}") && !env->rival_path)) {
		result_set(r, KS_SKIP, "loads and unloads modules: give their files with "
			   "--module PATH and --rival-module PATH (ILA_MODULE, ILA_RIVAL_MODULE)");
		return;
	}
	run_line(env, "dmesg", 10, &out);	/* the case starts with an empty kernel log */
	strv_free(&out);
	run_steps(env, col, &nm, r);
	for (i = 0; i < col->cleanup.n; i++) {
		line = resolve(col->cleanup.v[i], &nm);
		run_line(env, line, 60, &out);
		strv_free(&out);
		free(line);
	}
	restore(env, col, &nm, r);
}
