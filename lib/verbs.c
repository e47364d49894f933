// SPDX-License-Identifier: GPL-2.0
/* The verbs of a case step; see verbs.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "leftovers.h"
#include "verbs.h"

#define LINE_MAX_LEN 4096

static int failed(const char *what, int err, verb_line_fn out, void *ctx)
{
	char buf[LINE_MAX_LEN];

	snprintf(buf, sizeof(buf), "%s: %s", what, strerror(err));
	out(ctx, buf);
	return err;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Hand out complete lines of @buf (@len bytes); returns the bytes kept. */
static size_t emit_lines(char *buf, size_t len, int flush, verb_line_fn out,
			 void *ctx)
{
	size_t start = 0, i;

	for (i = 0; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		buf[i] = '\0';
		out(ctx, buf + start);
		start = i + 1;
	}
	if (flush && start < len) {
		buf[len] = '\0';
		out(ctx, buf + start);
		start = len;
	}
	memmove(buf, buf + start, len - start);
	return len - start;
}

static int cmd_exec(char **argv, int timeout_s, verb_line_fn out, void *ctx)
{
	static char buf[LINE_MAX_LEN + 1];
	long deadline = timeout_s ? now_ms() + timeout_s * 1000L : 0;
	int pipefd[2], status, timed_out = 0;
	size_t have = 0;
	pid_t pid;

	if (!argv[0])
		return failed("exec", EINVAL, out, ctx);
	if (pipe2(pipefd, O_CLOEXEC))
		return failed("pipe", errno, out, ctx);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return failed("fork", errno, out, ctx);
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		execvp(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
		int wait = deadline ? (int)(deadline - now_ms()) : -1;
		ssize_t n;

		if (deadline && wait <= 0) {
			kill(pid, SIGKILL);
			timed_out = 1;
			break;
		}
		if (poll(&p, 1, wait) == 0)
			continue;
		n = read(pipefd[0], buf + have, LINE_MAX_LEN - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have = emit_lines(buf, have + (size_t)n, have + (size_t)n == LINE_MAX_LEN,
				  out, ctx);
	}
	emit_lines(buf, have, 1, out, ctx);
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return failed("waitpid", errno, out, ctx);
	if (timed_out) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%s: killed after %d s", argv[0], timeout_s);
		out(ctx, msg);
		return 124;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* insmod PATH [PARAM=VALUE...]: the parameters joined by spaces. */
static int cmd_insmod(char **argv, verb_line_fn out, void *ctx)
{
	char params[1024] = "";
	size_t used = 0;
	int fd, i, err;

	if (!argv[0])
		return failed("insmod", EINVAL, out, ctx);
	for (i = 1; argv[i]; i++) {
		int n = snprintf(params + used, sizeof(params) - used, "%s%s",
				 used ? " " : "", argv[i]);

		if (n < 0 || (size_t)n >= sizeof(params) - used)
			return failed("insmod parameters", E2BIG, out, ctx);
		used += (size_t)n;
	}
	fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return failed(argv[0], errno, out, ctx);
	err = syscall(SYS_finit_module, fd, params, 0) ? errno : 0;
	close(fd);
	return err ? failed("finit_module", err, out, ctx) : 0;
}

static int cmd_rmmod(char **argv, verb_line_fn out, void *ctx)
{
	if (!argv[0])
		return failed("rmmod", EINVAL, out, ctx);
	if (syscall(SYS_delete_module, argv[0], O_NONBLOCK))
		return failed("delete_module", errno, out, ctx);
	return 0;
}

static int cmd_write(char **argv, verb_line_fn out, void *ctx)
{
	ssize_t len;
	int fd, err = 0;

	if (!argv[0] || !argv[1])
		return failed("write", EINVAL, out, ctx);
	fd = open(argv[0], O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return failed(argv[0], errno, out, ctx);
	len = (ssize_t)strlen(argv[1]);
	if (write(fd, argv[1], (size_t)len) != len)
		err = errno ? errno : EIO;
	close(fd);
	return err ? failed(argv[0], err, out, ctx) : 0;
}

/*
 * Open @path inside the network namespace "ip netns add @netns" made, as
 * "ip -n" would: /proc/net names the opening thread's namespace, so the
 * caller enters it for the open() alone.
 */
static FILE *open_in_netns(const char *netns, const char *path)
{
	char ns[256];
	int home, there, err;
	FILE *f;

	snprintf(ns, sizeof(ns), "/run/netns/%s", netns);
	there = open(ns, O_RDONLY | O_CLOEXEC);
	if (there < 0)
		return NULL;
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (home < 0 || setns(there, CLONE_NEWNET)) {
		err = errno;
		close(there);
		if (home >= 0)
			close(home);
		errno = err;
		return NULL;
	}
	f = fopen(path, "re");
	err = errno;
	if (setns(home, CLONE_NEWNET)) {
		fprintf(stderr, "cat -n: cannot return to the caller's network namespace: %s\n",
			strerror(errno));
		abort();
	}
	close(there);
	close(home);
	errno = err;
	return f;
}

static int cmd_cat(char **argv, verb_line_fn out, void *ctx)
{
	int in_netns = argv[0] && !strcmp(argv[0], "-n");
	const char *path = in_netns ? (argv[1] ? argv[2] : NULL) : argv[0];
	char line[LINE_MAX_LEN];
	FILE *f;

	if (!path)
		return failed("cat", EINVAL, out, ctx);
	f = in_netns ? open_in_netns(argv[1], path) : fopen(path, "re");
	if (!f)
		return failed(path, errno, out, ctx);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		out(ctx, line);
	}
	fclose(f);
	return 0;
}

static int cmd_mode(char **argv, verb_line_fn out, void *ctx)
{
	char text[16];
	struct stat st;

	if (!argv[0])
		return failed("mode", EINVAL, out, ctx);
	if (stat(argv[0], &st))
		return failed(argv[0], errno, out, ctx);
	snprintf(text, sizeof(text), "%o", (unsigned int)(st.st_mode & 07777));
	out(ctx, text);
	return 0;
}

/* The kernel log since the last dmesg, without the "<level>" prefixes. */
static int cmd_dmesg(verb_line_fn out, void *ctx)
{
	static char buf[1 << 17];
	char *line, *save;
	int n = klogctl(4 /* SYSLOG_ACTION_READ_CLEAR */, buf, sizeof(buf) - 1);

	if (n < 0)
		return failed("klogctl", errno, out, ctx);
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '<' && strchr(line, '>'))
			line = strchr(line, '>') + 1;
		out(ctx, line);
	}
	return 0;
}

/* The number of ILA routes and mappings, asked over netlink. */
static int cmd_leftovers(verb_line_fn out, void *ctx)
{
	char line[32];
	int n = ila_state_left();

	if (n < 0)
		return failed("leftovers: netlink dump", errno ? errno : EIO, out, ctx);
	snprintf(line, sizeof(line), "%d", n);
	out(ctx, line);
	return 0;
}

int verb_known(const char *verb)
{
	static const char *const verbs[] = {
		"exec", "insmod", "rmmod", "write", "cat", "mode", "dmesg", "leftovers",
	};
	size_t i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(verb, verbs[i]))
			return 1;
	return 0;
}

int verb_run(const char *verb, char **argv, int timeout_s, verb_line_fn out,
	     void *ctx)
{
	if (!strcmp(verb, "exec"))
		return cmd_exec(argv, timeout_s, out, ctx);
	if (!strcmp(verb, "insmod"))
		return cmd_insmod(argv, out, ctx);
	if (!strcmp(verb, "rmmod"))
		return cmd_rmmod(argv, out, ctx);
	if (!strcmp(verb, "write"))
		return cmd_write(argv, out, ctx);
	if (!strcmp(verb, "cat"))
		return cmd_cat(argv, out, ctx);
	if (!strcmp(verb, "mode"))
		return cmd_mode(argv, out, ctx);
	if (!strcmp(verb, "dmesg"))
		return cmd_dmesg(out, ctx);
	if (!strcmp(verb, "leftovers"))
		return cmd_leftovers(out, ctx);
	return failed(verb, ENOSYS, out, ctx);
}
