// SPDX-License-Identifier: GPL-2.0
/*
 * ila_conformance [--folder F[,F...]] [--case GLOB[,GLOB...]] [--impl COLUMNS]
 *                 [--bundle DIR] [--module PATH] [--rival-module PATH] [--list]
 *                 [--stop-on-fail]
 *
 * Runs the catalog's cases in the booted kernel and prints one flat TAP
 * document: "ok N NAME", "ok N NAME # XFAIL REQUIREMENT: REASON" (a declared
 * deviation, observed exactly), "ok N NAME # SKIP REASON", or "not ok N NAME"
 * after "#" lines saying what differs and the requirement broken. Exit 0,
 * 1 when a case failed, 4 when every case was skipped.
 *
 * Columns (the implementation and its configuration, as make conformance
 * names them): --impl, else $ILA_IMPL, else what the kernel has: ours
 * (ila_ref) when it is loaded, else the in-tree module's configurations.
 * $ILA_CASE is --case's default, for a runner that passes no options
 * (run_kselftest.sh); $ILA_MODULE and $ILA_RIVAL_MODULE those of --module
 * and --rival-module.
 * $ILA_KERNEL_VERSION (else uname -r) picks the deviations of kernel
 * releases that differ (a fix in a stable release).
 *
 * --stop-on-fail ends the run at the first failing case with "Bail out!"
 * (make kselftest-run MUTANTS=: a mutant is killed by one failure).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "runner.h"

#define MAX_COLUMNS 32
#define PROBE_ROUTE "3333:0:0:1:2000:0:ffff:0/128"

/* The in-tree module's configurations that need no build of their own. */
#define INTREE_COLUMNS "intree-defaults,intree-luid,intree-map,intree-map-adj"

struct options {
	char bundle[1100], tools[1024];
	char *folders, *cases, *impl;
	const char *module, *rival;
	int list, stop_on_fail;
	int shard, shards;	/* --shard K/N: every Nth selected case from the Kth */
};

void result_set(struct ks_result *r, enum ks_status status, const char *fmt, ...)
{
	va_list ap;

	r->status = status;
	va_start(ap, fmt);
	vsnprintf(r->detail, sizeof(r->detail), fmt, ap);
	va_end(ap);
}

void result_diag(struct ks_result *r, const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	strv_push(&r->diag, line);
}

static void usage(int rc)
{
	fprintf(rc ? stderr : stdout,
		"usage: ila_conformance [--folder F,...] [--case GLOB,...] [--impl COLUMNS]\n"
		"                       [--bundle DIR] [--module PATH] [--rival-module PATH] [--list]\n"
		"                       [--stop-on-fail] [--shard K/N]\n");
	exit(rc);
}

/*
 * Whether @item is in the comma-separated @list (globs if @glob): named by
 * one of its items, and by none of those written !GLOB, which leave out.
 */
static int listed(const char *list, const char *item, int glob)
{
	char *copy, *w, *save;
	int hit = 0, any = 0, out = 0;

	if (!list || !*list)
		return 1;
	copy = xstrdup(list);
	for (w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int neg = w[0] == '!';
		int match = glob ? !fnmatch(w + neg, item, 0) : !strcmp(w + neg, item);

		if (neg) {
			out |= match;
		} else {
			any = 1;
			hit |= match;
		}
	}
	free(copy);
	return (hit || !any) && !out;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every case file under bundle/<folder>/, in order. */
static int read_cases(const struct options *o, struct ks_case ***out)
{
	struct strv files = { 0 };
	struct ks_case **cases;
	struct dirent *d, *e;
	char err[1024], path[2048];
	DIR *top = opendir(o->bundle), *sub;
	int i, n = 0, matched = 0;

	if (!top) {
		fprintf(stderr, "ila_conformance: %s: %s (make kselftest writes the bundle)\n",
			o->bundle, strerror(errno));
		exit(1);
	}
	while ((d = readdir(top))) {
		if (d->d_name[0] == '.' || !listed(o->folders, d->d_name, 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s", o->bundle, d->d_name);
		sub = opendir(path);
		if (!sub)
			continue;
		while ((e = readdir(sub))) {
			size_t len = strlen(e->d_name);

			if (len > 5 && !strcmp(e->d_name + len - 5, ".case")) {
				snprintf(path, sizeof(path), "%s/%s/%s", o->bundle, d->d_name,
					 e->d_name);
				strv_push(&files, path);
			}
		}
		closedir(sub);
	}
	closedir(top);
	if (files.n)
		qsort(files.v, (size_t)files.n, sizeof(char *), by_name);
	cases = xcalloc((size_t)files.n + 1, sizeof(*cases));
	for (i = 0; i < files.n; i++) {
		struct ks_case *c = bundle_read(files.v[i], err, sizeof(err));

		if (!c) {
			fprintf(stderr, "ila_conformance: %s\n", err);
			exit(1);
		}
		if (listed(o->cases, c->id, 1) && matched++ % o->shards == o->shard)
			cases[n++] = c;
	}
	strv_free(&files);
	*out = cases;
	return n;
}

/* Release numbers of a version text ("6.1.192-3", "6.12.0-rc1") for comparing. */
static void numbers(const char *text, long v[4])
{
	int i;

	for (i = 0; i < 4; i++) {
		v[i] = 0;
		if (*text >= '0' && *text <= '9')
			v[i] = strtol(text, (char **)&text, 10);
		if (*text == '.')
			text++;
		else
			text = "";
	}
}

static int compare(const char *a, const char *b)
{
	long x[4], y[4];
	int i;

	numbers(a, x);
	numbers(b, y);
	for (i = 0; i < 4; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* "kernel >=6.1.183 <6.2": whether @version lies in the range. */
static int kernel_holds(const char *range, const char *version)
{
	char *copy, *w, *save;
	int ok = 1;

	if (!range)
		return 1;
	copy = xstrdup(range);
	for (w = strtok_r(copy, " ", &save); w && ok; w = strtok_r(NULL, " ", &save)) {
		if (!strncmp(w, ">=", 2))
			ok = compare(version, w + 2) >= 0;
		else if (w[0] == '<')
			ok = compare(version, w + 1) < 0;
	}
	free(copy);
	return ok;
}

static const struct ks_column *block(const struct ks_case *c, const char *impl,
				     const char *version)
{
	int i;

	for (i = 0; i < c->ncols; i++)
		if (!strcmp(c->cols[i].impl, impl) && kernel_holds(c->cols[i].kernel, version))
			return &c->cols[i];
	return NULL;
}

/* Whether an ILA route is taken in the DUT's namespace (a module may be auto-loaded). */
static int ila_present(const struct ks_env *env, struct strv *why)
{
	struct strv out = { 0 };
	int rc = run_line(env, "ip -6 route add " PROBE_ROUTE " encap ila 2001:0:0:1 dev lo",
			  30, why);

	run_line(env, "ip -6 route del " PROBE_ROUTE, 30, &out);
	strv_free(&out);
	return rc == 0;
}

static char *detect_columns(const struct ks_env *env, char *why, size_t whylen)
{
	struct strv out = { 0 };
	struct stat st;

	if (!ila_present(env, &out)) {
		snprintf(why, whylen, "no ILA implementation takes routes in this kernel "
			 "(%s): enable CONFIG_IPV6_ILA, or load ila_ref",
			 out.n ? out.v[out.n - 1] : "ip gave no reason");
		strv_free(&out);
		return NULL;
	}
	strv_free(&out);
	if (!stat("/proc/net/ila_ref_stats", &st))
		return xstrdup("module");
	return xstrdup(INTREE_COLUMNS);
}

/* Diagnostics must not read as a verdict to NIPA's scan ("[FAIL]", " FAIL:", "SKIP:"). */
static void clean(char *text)
{
	static const char *const words[] = { "[FAIL]", " FAIL:", "SKIP:", "[SKIP]" };
	size_t i;
	char *p;

	for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		while ((p = strstr(text, words[i])))
			for (; *p && *p != ':' && *p != ']'; p++)
				if (*p >= 'A' && *p <= 'Z')
					*p = (char)(*p - 'A' + 'a');
}

struct totals {
	int pass, fail, xfail, skip, n;
};

static void report(struct totals *tot, const struct ks_case *c, const char *name,
		   struct ks_result *r)
{
	int i;

	tot->n++;
	clean(r->detail);
	if (r->status == KS_FAIL)
		printf("# %s: %s [breaks %s]\n", c->id, r->detail, c->requirements ?
		       c->requirements : "");
	for (i = 0; i < r->diag.n; i++) {
		clean(r->diag.v[i]);
		printf("# %s\n", r->diag.v[i]);
	}
	switch (r->status) {
	case KS_PASS:
		tot->pass++;
		printf("ok %d %s\n", tot->n, name);
		break;
	case KS_XFAIL:
		tot->xfail++;
		printf("ok %d %s # XFAIL %s\n", tot->n, name, r->detail);
		break;
	case KS_SKIP:
		tot->skip++;
		printf("ok %d %s # SKIP %s\n", tot->n, name, r->detail);
		break;
	default:
		tot->fail++;
		printf("not ok %d %s\n", tot->n, name);
	}
	fflush(stdout);
	strv_free(&r->diag);
}

static void parse(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "bundle", required_argument, NULL, 'b' },
		{ "folder", required_argument, NULL, 'f' },
		{ "case", required_argument, NULL, 'c' },
		{ "impl", required_argument, NULL, 'i' },
		{ "module", required_argument, NULL, 'm' },
		{ "rival-module", required_argument, NULL, 'r' },
		{ "list", no_argument, NULL, 'l' },
		{ "stop-on-fail", no_argument, NULL, 'x' },
		{ "shard", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char self[1024];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char extra;
	int opt;

	memset(o, 0, sizeof(*o));
	self[n > 0 ? n : 0] = '\0';
	snprintf(o->tools, sizeof(o->tools), "%s", n > 0 ? dirname(self) : ".");
	snprintf(o->bundle, sizeof(o->bundle), "%s/bundle", o->tools);
	o->impl = getenv("ILA_IMPL");
	o->cases = getenv("ILA_CASE");
	o->module = getenv("ILA_MODULE");
	o->rival = getenv("ILA_RIVAL_MODULE");
	o->shards = 1;
	while ((opt = getopt_long(argc, argv, "b:f:c:i:m:r:lxs:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			snprintf(o->bundle, sizeof(o->bundle), "%s", optarg);
			break;
		case 'f':
			o->folders = optarg;
			break;
		case 'c':
			o->cases = optarg;
			break;
		case 'i':
			o->impl = optarg;
			break;
		case 'm':
			o->module = optarg;
			break;
		case 'r':
			o->rival = optarg;
			break;
		case 'l':
			o->list = 1;
			break;
		case 'x':
			o->stop_on_fail = 1;
			break;
		case 's':
			/* the runs of one column side by side, one per CPU */
			if (sscanf(optarg, "%d/%d%c", &o->shard, &o->shards, &extra) != 2 ||
			    o->shards < 1 || o->shard < 0 || o->shard >= o->shards) {
				fprintf(stderr, "ila_conformance: --shard %s: want K/N, 0 <= K < N\n",
					optarg);
				exit(2);
			}
			break;
		case 'h':
			usage(0);
			break;
		default:
			usage(2);
		}
	}
	if (optind != argc)
		usage(2);
}

int main(int argc, char **argv)
{
	char err[1024], path[2048], why[1024] = "", *columns, *col, *save;
	const char *version = getenv("ILA_KERNEL_VERSION");
	struct ks_topology topo;
	struct totals tot = { 0 };
	struct ks_case **cases;
	struct ks_env env = { 0 };
	struct options o;
	struct utsname uts;
	int ncases, i, up;

	setvbuf(stdout, NULL, _IOLBF, 0);
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 0);
	parse(argc, argv, &o);
	uname(&uts);
	if (!version || !*version)
		version = uts.release;
	ncases = read_cases(&o, &cases);
	if (o.list) {
		for (i = 0; i < ncases; i++)
			printf("%s\n", cases[i]->id);
		return 0;
	}
	if (!ncases) {
		printf("TAP version 13\n1..0 # SKIP no case in %s matches --folder %s --case %s\n",
		       o.bundle, o.folders ? o.folders : "*", o.cases ? o.cases : "*");
		return 4;
	}
	snprintf(path, sizeof(path), "%s/topology", o.bundle);
	if (topology_read(&topo, path, err, sizeof(err))) {
		fprintf(stderr, "ila_conformance: %s\n", err);
		return 1;
	}
	env.tools_dir = o.tools;
	env.module_path = o.module;
	env.rival_path = o.rival;

	printf("TAP version 13\n");
	up = geteuid() == 0 ? !topology_up(&topo, err, sizeof(err)) : 0;
	if (geteuid() != 0)
		snprintf(err, sizeof(err), "needs root (network namespaces, packet sockets)");
	columns = up ? (o.impl && *o.impl ? xstrdup(o.impl) : detect_columns(&env, why,
									     sizeof(why))) : NULL;
	if (!up)
		snprintf(why, sizeof(why), "%s", err);
	printf("# ila_conformance: kernel %s, columns %s, bundle %s\n", version,
	       columns ? columns : "none", o.bundle);
	if (!columns) {
		/* nothing can run: every case of every default column is a skip */
		printf("1..%d\n", ncases);
		for (i = 0; i < ncases; i++) {
			struct ks_result r = { 0 };

			result_set(&r, up ? KS_SKIP : KS_FAIL, "%s", why);
			if (!up && geteuid() != 0)
				r.status = KS_SKIP;
			report(&tot, cases[i], cases[i]->id, &r);
		}
	} else {
		int planned = 0;

		for (col = strtok_r(xstrdup(columns), ",", &save); col;
		     col = strtok_r(NULL, ",", &save))
			planned += ncases;
		printf("1..%d\n", planned);
		for (col = strtok_r(columns, ",", &save); col; col = strtok_r(NULL, ",", &save)) {
			for (i = 0; i < ncases; i++) {
				const struct ks_column *b = block(cases[i], col, version);
				struct ks_result r = { 0 };
				char name[512];

				snprintf(name, sizeof(name), "%s", b ? b->name : cases[i]->id);
				if (!b)
					result_set(&r, KS_FAIL, "the bundle has no column %s for "
						   "kernel %s (columns: the names make conformance's "
						   "IMPL= takes)", col, version);
				else if (b->skip)
					result_set(&r, KS_SKIP, "%s", b->skip);
				else if (!strcmp(cases[i]->path, "control"))
					steps_run(&topo, &env, cases[i], b, &r);
				else
					packet_run(&topo, &env, cases[i], b, &r);
				report(&tot, cases[i], name, &r);
				if (o.stop_on_fail && tot.fail) {
					printf("Bail out! %s failed (--stop-on-fail)\n", name);
					goto out;
				}
			}
		}
	}
out:
	if (up)
		topology_down(&topo);
	printf("# Totals: pass:%d fail:%d xfail:%d xpass:0 skip:%d error:0\n", tot.pass,
	       tot.fail, tot.xfail, tot.skip);
	if (tot.fail)
		return 1;
	return tot.skip == tot.n ? 4 : 0;
}
