// SPDX-License-Identifier: GPL-2.0
/*
 * PID 1 of the test guest: an agent that the host drives.
 *
 * The host runs every step of every case (interface set-up, module loading,
 * routes, packet injection) by sending one command per line on the control
 * serial port /dev/ttyS1; the agent runs it and answers with the command's
 * output and status. The verdict is computed on the host from the frames it
 * captured, so kernel messages on the console (ttyS0) can never fake a pass.
 *
 * Protocol, one line each way, fields separated by single spaces:
 *   host:  ID VERB ARG...      VERB is exec, insmod (PATH [PARAM=VALUE...]),
 *                              rmmod, write, cat ([-n NETNS] FILE), mode
 *                              (FILE's permission bits, in octal), dmesg
 *                              (read and clear the kernel log), reboot
 *   guest: ID out TEXT         zero or more lines of output
 *          ID rc N             last line: 0 on success
 *   guest: 0 ready RELEASE     once, when the agent starts
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#define CONTROL_TTY "/dev/ttyS1"
#define MAX_LINE 65536
#define MAX_ARGS 1024

static FILE *ctl;

static void die(const char *what)
{
	fprintf(stderr, "init: %s: %s\n", what, strerror(errno));
	fflush(stderr);
	reboot(RB_AUTOBOOT);
	_exit(1);
}

static void mount_filesystems(void)
{
	static const struct { const char *src, *dst, *type; } fs[] = {
		{ "proc", "/proc", "proc" },
		{ "sysfs", "/sys", "sysfs" },
		{ "devtmpfs", "/dev", "devtmpfs" },
		{ "tmpfs", "/tmp", "tmpfs" },
	};
	size_t i;

	for (i = 0; i < sizeof(fs) / sizeof(fs[0]); i++) {
		mkdir(fs[i].dst, 0755);
		if (mount(fs[i].src, fs[i].dst, fs[i].type, 0, NULL) &&
		    errno != EBUSY)
			die(fs[i].dst);
	}
	/* kmemleak's interface, on kernels built with debugfs (KERNEL=debug) */
	if (mount("debugfs", "/sys/kernel/debug", "debugfs", 0, NULL) &&
	    errno != ENODEV && errno != ENOENT && errno != EBUSY)
		die("/sys/kernel/debug");
}

/* Raw mode: no echo, no line editing, no CR/LF translation. */
static void open_control_channel(void)
{
	struct termios tio;
	int fd = open(CONTROL_TTY, O_RDWR | O_NOCTTY);

	if (fd < 0)
		die("open " CONTROL_TTY);
	if (tcgetattr(fd, &tio))
		die("tcgetattr " CONTROL_TTY);
	cfmakeraw(&tio);
	cfsetspeed(&tio, B115200);
	if (tcsetattr(fd, TCSANOW, &tio))
		die("tcsetattr " CONTROL_TTY);
	ctl = fdopen(fd, "r+");
	if (!ctl)
		die("fdopen");
	setvbuf(ctl, NULL, _IOLBF, 0);
}

static void reply_out(const char *id, const char *text)
{
	fprintf(ctl, "%s out %s\n", id, text);
}

static void reply_rc(const char *id, int rc)
{
	fprintf(ctl, "%s rc %d\n", id, rc);
	fflush(ctl);
	printf("# agent %s rc %d\n", id, rc);
	fflush(stdout);
}

static void reply_errno(const char *id, const char *what, int err)
{
	char buf[256];

	snprintf(buf, sizeof(buf), "%s: %s", what, strerror(err));
	reply_out(id, buf);
	reply_rc(id, err);
}

/* Run argv[0] (an absolute path), sending its stdout and stderr back. */
static void cmd_exec(const char *id, char **argv)
{
	char line[4096];
	int pipefd[2], status;
	pid_t pid;
	FILE *out;

	if (!argv[0]) {
		reply_errno(id, "exec", EINVAL);
		return;
	}
	if (pipe(pipefd)) {
		reply_errno(id, "pipe", errno);
		return;
	}
	pid = fork();
	if (pid < 0) {
		reply_errno(id, "fork", errno);
		return;
	}
	if (pid == 0) {
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		close(pipefd[1]);
		execv(argv[0], argv);
		fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pipefd[1]);
	out = fdopen(pipefd[0], "r");
	while (out && fgets(line, sizeof(line), out)) {
		line[strcspn(line, "\n")] = '\0';
		reply_out(id, line);
	}
	if (out)
		fclose(out);
	if (waitpid(pid, &status, 0) < 0) {
		reply_errno(id, "waitpid", errno);
		return;
	}
	reply_rc(id, WIFEXITED(status) ? WEXITSTATUS(status) :
					 128 + WTERMSIG(status));
}

/* insmod PATH [PARAM=VALUE...]: the parameters go to the module joined by spaces. */
static void cmd_insmod(const char *id, char **argv)
{
	char params[1024] = "";
	size_t used = 0;
	int fd, i;

	if (!argv[0]) {
		reply_errno(id, "insmod", EINVAL);
		return;
	}
	for (i = 1; argv[i]; i++) {
		int n = snprintf(params + used, sizeof(params) - used, "%s%s",
				 used ? " " : "", argv[i]);

		if (n < 0 || (size_t)n >= sizeof(params) - used) {
			reply_errno(id, "insmod parameters", E2BIG);
			return;
		}
		used += n;
	}
	fd = open(argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		reply_errno(id, argv[0], errno);
		return;
	}
	if (syscall(SYS_finit_module, fd, params, 0)) {
		int err = errno;

		close(fd);
		reply_errno(id, "finit_module", err);
		return;
	}
	close(fd);
	reply_rc(id, 0);
}

static void cmd_rmmod(const char *id, char **argv)
{
	if (!argv[0]) {
		reply_errno(id, "rmmod", EINVAL);
		return;
	}
	if (syscall(SYS_delete_module, argv[0], O_NONBLOCK)) {
		reply_errno(id, "delete_module", errno);
		return;
	}
	reply_rc(id, 0);
}

/* write PATH VALUE: for sysctls under /proc/sys. */
static void cmd_write(const char *id, char **argv)
{
	int fd, len;

	if (!argv[0] || !argv[1]) {
		reply_errno(id, "write", EINVAL);
		return;
	}
	fd = open(argv[0], O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		reply_errno(id, argv[0], errno);
		return;
	}
	len = (int)strlen(argv[1]);
	if (write(fd, argv[1], (size_t)len) != len) {
		int err = errno;

		close(fd);
		reply_errno(id, argv[0], err);
		return;
	}
	close(fd);
	reply_rc(id, 0);
}

/*
 * Open @path from inside the network namespace that "ip netns add @netns"
 * made, as "ip -n" would run a command there: /proc/net names the opening
 * thread's namespace, so the agent enters it for the open() alone.
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
	if (setns(home, CLONE_NEWNET))
		die("cat -n: cannot return to the initial network namespace");
	close(there);
	close(home);
	errno = err;
	return f;
}

/* cat FILE, or cat -n NETNS FILE: FILE's lines as output. */
static void cmd_cat(const char *id, char **argv)
{
	bool in_netns = argv[0] && !strcmp(argv[0], "-n");
	const char *path = in_netns ? (argv[1] ? argv[2] : NULL) : argv[0];
	char line[4096];
	FILE *f;

	if (!path) {
		reply_errno(id, "cat", EINVAL);
		return;
	}
	f = in_netns ? open_in_netns(argv[1], path) : fopen(path, "re");
	if (!f) {
		reply_errno(id, path, errno);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		reply_out(id, line);
	}
	fclose(f);
	reply_rc(id, 0);
}

/* mode FILE: its permission bits in octal, as "stat -c %a" would print them. */
static void cmd_mode(const char *id, char **argv)
{
	char text[16];
	struct stat st;

	if (!argv[0]) {
		reply_errno(id, "mode", EINVAL);
		return;
	}
	if (stat(argv[0], &st)) {
		reply_errno(id, argv[0], errno);
		return;
	}
	snprintf(text, sizeof(text), "%o", (unsigned int)(st.st_mode & 07777));
	reply_out(id, text);
	reply_rc(id, 0);
}

/* The kernel log since the last dmesg, without the "<level>" prefixes. */
static void cmd_dmesg(const char *id)
{
	static char buf[1 << 17];
	char *line, *save;
	int n = klogctl(4 /* SYSLOG_ACTION_READ_CLEAR */, buf, sizeof(buf) - 1);

	if (n < 0) {
		reply_errno(id, "klogctl", errno);
		return;
	}
	buf[n] = '\0';
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '<' && strchr(line, '>'))
			line = strchr(line, '>') + 1;
		reply_out(id, line);
	}
	reply_rc(id, 0);
}

static int split(char *line, char **argv, int max)
{
	int n = 0;
	char *tok, *save;

	for (tok = strtok_r(line, " ", &save); tok && n < max - 1;
	     tok = strtok_r(NULL, " ", &save))
		argv[n++] = tok;
	argv[n] = NULL;
	return n;
}

static void serve(void)
{
	static char line[MAX_LINE];
	char *argv[MAX_ARGS];
	struct utsname uts;

	uname(&uts);
	fprintf(ctl, "0 ready %s\n", uts.release);
	fflush(ctl);

	while (fgets(line, sizeof(line), ctl)) {
		int argc;

		line[strcspn(line, "\r\n")] = '\0';
		argc = split(line, argv, MAX_ARGS);
		if (argc < 2)
			continue;
		printf("# agent %s %s\n", argv[0], argv[1]);
		fflush(stdout);
		if (!strcmp(argv[1], "exec"))
			cmd_exec(argv[0], argv + 2);
		else if (!strcmp(argv[1], "insmod"))
			cmd_insmod(argv[0], argv + 2);
		else if (!strcmp(argv[1], "rmmod"))
			cmd_rmmod(argv[0], argv + 2);
		else if (!strcmp(argv[1], "write"))
			cmd_write(argv[0], argv + 2);
		else if (!strcmp(argv[1], "cat"))
			cmd_cat(argv[0], argv + 2);
		else if (!strcmp(argv[1], "mode"))
			cmd_mode(argv[0], argv + 2);
		else if (!strcmp(argv[1], "dmesg"))
			cmd_dmesg(argv[0]);
		else if (!strcmp(argv[1], "reboot"))
			return;
		else
			reply_errno(argv[0], argv[1], ENOSYS);
	}
}

int main(void)
{
	mount_filesystems();
	open_control_channel();
	printf("init: agent ready on %s\n", CONTROL_TTY);
	fflush(stdout);
	serve();
	printf("init: done, rebooting\n");
	fflush(stdout);
	sync();
	reboot(RB_AUTOBOOT);
	return 0;
}
