/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ila_conformance: the ILA conformance catalog as a kselftest program.
 *
 * Every case of the catalog, judged inside the booted kernel by its golden
 * frames, with no host: the case bundle (made by `make kselftest` from the
 * case files, the deviations and pcaps/) says per case and column what to
 * set up, what to send and which frames must come out. The far side of the
 * network is a namespace of our own, joined to the node under test by veth
 * pairs that stand for the QEMU NICs the golden captures were made on.
 *
 *   bundle.c    reading the bundle
 *   topology.c  the namespaces, the veth pairs and their offloads
 *   wire.c      the far side: sending frames, capturing them, fences
 *   packet.c    running a packet case and judging its frames
 *   steps.c     running a control-plane case's steps
 *   json.c      the JSON subset check of a control step
 *   commands.c  a case's command lines: the machine's ip, our tools, verbs
 *   main.c      options, columns, TAP
 */
#ifndef ILA_KSELFTEST_RUNNER_H
#define ILA_KSELFTEST_RUNNER_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

#define KS_MAX_NICS 4

/* A growable list of strings. */
struct strv {
	char **v;
	int n, cap;
};

void strv_push(struct strv *s, const char *text);
void strv_free(struct strv *s);
char *xstrdup(const char *s);
void *xcalloc(size_t n, size_t size);

/* An expected frame, and its byte ranges' Wireshark names ("off:len:name ..."). */
struct ks_frame {
	uint8_t *data;
	size_t len;
	char *fields;
};

struct ks_frameset {
	char *name;
	struct ks_frame *frames;
	int n;
};

/* What a control step must give: status and output. */
struct ks_expect {
	int rc;
	int have_stdout;
	struct strv stdout_lines, contains, match, absent;
	char *json;
};

struct ks_step {
	char *run;
	struct ks_expect want;
	int have_alt, have_stop;
	struct ks_expect alt;	/* the column's declared deviation of this step */
	struct ks_expect stop;	/* the column stops here, giving this instead */
	double retry;
	int timeout;
	char *respond;
};

/* One column's block of a case. */
struct ks_column {
	char *impl, *name, *kernel;
	char *module, *rival;	/* module names: the column's and its rival's */
	char *skip;
	struct strv setup, teardown;
	int check_stats;
	char *stats;
	char *inject_error;
	char *expect, *expect_missing;
	char *deviation, *dev_route_error, *dev_inject_error, *dev_expect;
	char *clone_deviation;
	struct ks_step *steps;
	int nsteps;
	struct strv cleanup;
};

struct ks_case {
	char *file;
	char *id, *verifies, *requirements, *path;
	char *send, *sock, *nic, *rx, *layout;
	uint8_t *frame;
	size_t frame_len;
	int mask_tcp_window;
	struct strv flow;
	struct ks_frameset *sets;
	int nsets;
	struct ks_column *cols;
	int ncols;
};

/* Reads one case file; NULL with @err on a malformed one. */
struct ks_case *bundle_read(const char *path, char *err, size_t errlen);
const struct ks_frameset *bundle_frameset(const struct ks_case *c, const char *name);

/* A NIC of the topology: the DUT's side, and the far side's. */
struct ks_nic {
	char dev[16], peer[16];
	uint8_t guest_mac[6], host_mac[6];
	struct in6_addr guest_addr, host_addr;
	int tx_csum;	/* the NIC model offloads the transmit checksum */
	int pads;	/* the NIC model pads short frames to 60 bytes */
	int fd;		/* packet socket on the far side */
};

struct ks_topology {
	char dut[64], peer[64];
	struct ks_nic nic[KS_MAX_NICS];
	int nnics;
	struct strv setup;	/* "write PATH VALUE" and "exec ARGV" lines */
};

int topology_read(struct ks_topology *t, const char *path, char *err, size_t errlen);
/* Make the namespaces and NICs and enter the DUT's namespace; 0 or -1 (@err). */
int topology_up(struct ks_topology *t, char *err, size_t errlen);
void topology_down(struct ks_topology *t);
int topology_nic(const struct ks_topology *t, const char *dev);

/* Frames captured on the far side, per NIC. */
struct ks_capture {
	uint8_t **frame[KS_MAX_NICS];
	size_t *len[KS_MAX_NICS];
	int n[KS_MAX_NICS], cap[KS_MAX_NICS];
};

void capture_free(struct ks_capture *cap);
/* The far side's packet sockets, one per NIC (called in its namespace). */
int wire_open(struct ks_topology *t, char *err, size_t errlen);
int wire_inject(struct ks_topology *t, int nic, const uint8_t *frame, size_t len,
		char *err, size_t errlen);
/* Everything until the DUT's end-of-case mark arrives on the first NIC. */
int wire_until_mark(struct ks_topology *t, unsigned int seq, struct ks_capture *cap,
		    char *err, size_t errlen);
/* Everything until the DUT answers the far side's fence on @nic. */
int wire_until_fence(struct ks_topology *t, int nic, unsigned int seq,
		     struct ks_capture *cap, char *err, size_t errlen);
void wire_drain(struct ks_topology *t);

/* A result, as TAP prints it. */
enum ks_status { KS_PASS, KS_FAIL, KS_XFAIL, KS_SKIP };

struct ks_result {
	enum ks_status status;
	char detail[1024];
	struct strv diag;
};

void result_set(struct ks_result *r, enum ks_status status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void result_diag(struct ks_result *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Where the runner's own programs (ila-nl, ila-map, ...) and modules are. */
struct ks_env {
	const char *tools_dir;
	const char *module_path, *rival_path;
	unsigned int fence;
};

void packet_run(struct ks_topology *t, struct ks_env *env, const struct ks_case *c,
		const struct ks_column *col, struct ks_result *r);
void steps_run(struct ks_topology *t, struct ks_env *env, const struct ks_case *c,
	       const struct ks_column *col, struct ks_result *r);

/* A command line of a case (ip ..., or a verb), run in the DUT's namespace. */
int run_line(const struct ks_env *env, const char *line, int timeout_s, struct strv *out);
/* @name's path on PATH, in @buf; NULL when there is none. */
const char *which(const char *name, char *buf, size_t len);
/* ILA routes (and mappings) left in any table; with purge, deleted. */
int leftover_ila(const struct ks_env *env, int purge, struct strv *left);

/* Whether the JSON text @got holds, for each element of @want, one it is a subset of. */
int json_subset_holds(const char *want, const char *got, char *why, size_t whylen);

#endif
