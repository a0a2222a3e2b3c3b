// SPDX-License-Identifier: MIT
/*
 * The source must pass `e2fsck -fn`: converting a damaged filesystem would
 * carry its damage over, and the saved image would restore it.  e2fsck is
 * the authority on ext, so it is run rather than imitated.
 */
#include "migrate.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int mig_e2fsck(struct mig *m)
{
	char *argv[] = { "e2fsck", "-f", "-n", "--", (char *)m->path, NULL };
	posix_spawn_file_actions_t fa;
	int status, err;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	if (!m->verbose) {
		posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
		posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
	} else {
		/* its report goes with ours, to stderr: stdout holds the plan */
		posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO);
	}
	err = posix_spawnp(&pid, "e2fsck", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (err)
		return mig_error(m, "cannot run e2fsck (from e2fsprogs): %s", strerror(err));
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return mig_error(m, "waiting for e2fsck: %s", strerror(errno));
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (WIFEXITED(status))
		return mig_error(m, "'e2fsck -fn %s' found problems (exit status %d): "
				 "run e2fsck -f on it first", m->path, WEXITSTATUS(status));
	return mig_error(m, "e2fsck was killed by signal %d", WTERMSIG(status));
}
