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
 *
 * With ila.run=PROGRAM on the kernel command line there is no agent: init
 * runs PROGRAM (make kselftest-run: the kselftest collection, which needs no
 * host) with its stdout on the control port and its stderr on the console,
 * then powers off. The host only reads what PROGRAM printed. With
 * ila.out=console as well, PROGRAM's output goes to the console instead: a
 * LAVA device has one serial port, and its log is all the host gets.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "../lib/verbs.h"

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

static void out_line(void *ctx, const char *line)
{
	reply_out(ctx, line);
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
		if (!strcmp(argv[1], "reboot"))
			return;
		if (verb_known(argv[1]))
			reply_rc(argv[0], verb_run(argv[1], argv + 2, 0, out_line, argv[0]));
		else
			reply_errno(argv[0], argv[1], ENOSYS);
	}
}

/*
 * A copy of the value of @key (such as "ila.run=") on the kernel command
 * line, or NULL.
 */
static char *cmdline_value(const char *key)
{
	char cmdline[4096];
	char *word, *save;
	FILE *f = fopen("/proc/cmdline", "re");

	if (!f)
		return NULL;
	if (!fgets(cmdline, sizeof(cmdline), f))
		cmdline[0] = '\0';
	fclose(f);
	for (word = strtok_r(cmdline, " \n", &save); word;
	     word = strtok_r(NULL, " \n", &save))
		if (!strncmp(word, key, strlen(key)))
			return strdup(word + strlen(key));
	return NULL;
}

/*
 * Run @program with its output on the control port, or on the console for
 * ila.out=console; its status there too.
 */
static void run_unattended(char *program)
{
	char *argv[] = { program, NULL };
	char *out = cmdline_value("ila.out=");
	int status = 0;
	pid_t pid;

	/* a LAVA device may have no second serial port at all */
	if (out && !strcmp(out, "console"))
		ctl = stdout;
	else
		open_control_channel();
	free(out);
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		dup2(fileno(ctl), 1);
		setenv("PATH", "/bin:/sbin:/usr/bin:/usr/sbin", 1);
		execv(program, argv);
		fprintf(stderr, "init: exec %s: %s\n", program, strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	fprintf(ctl, "ila.run: %s exited %d\n", program,
		WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	fflush(ctl);
}

int main(void)
{
	char *program;

	mount_filesystems();
	program = cmdline_value("ila.run=");
	if (program) {
		run_unattended(program);
		sync();
		reboot(RB_AUTOBOOT);
		return 0;
	}
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
