/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The commands a case step runs in the guest: a program, or one of the
 * verbs that need no program (a guest may have no shell or coreutils).
 * Shared by the guest agent (guest-init/init.c), which the host drives, and
 * the kselftest runner (kselftest/runner/), which runs the steps itself.
 *
 *   exec ARGV...            a program (found on PATH); stdout and stderr
 *   insmod PATH [PARAM...]  finit_module; the status is the errno
 *   rmmod NAME              delete_module(O_NONBLOCK); the status is the errno
 *   write PATH VALUE        for sysctls under /proc/sys
 *   cat [-n NETNS] FILE     FILE's lines (-n: opened inside NETNS of ip netns add)
 *   mode FILE               its permission bits, in octal
 *   dmesg                   the kernel log since the last dmesg, then cleared
 *   leftovers               the number of ILA routes and mappings (netlink)
 */
#ifndef ILA_LIB_VERBS_H
#define ILA_LIB_VERBS_H

/* Each line of a command's output, without its newline. */
typedef void (*verb_line_fn)(void *ctx, const char *line);

/*
 * Run @verb with @argv (NULL-terminated). Returns the status: the exit
 * status of a program (128 + the signal that ended it, 124 when it
 * outlived @timeout_s seconds; 0 waits for ever), or 0 or an errno for the
 * other verbs, whose failure is also one line "what: strerror".
 */
int verb_run(const char *verb, char **argv, int timeout_s, verb_line_fn out,
	     void *ctx);

/* Whether @verb is one verb_run() knows. */
int verb_known(const char *verb);

#endif
