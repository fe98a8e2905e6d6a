/* optimus - the command-line front end of the Optimus engine: the subcommand table and main.
 *
 * Each subcommand lives in its own file (cmd-NAME.c) and is listed once, in OX_CLI_COMMANDS
 * (cli.h); the shared options, loading and output helpers are in cli.c.
 *
 * Exit status: 0 success, 1 bad input / failed check / failed write, 2 usage error.
 * Diagnostics go to stderr as FILE:LINE:COL: error|warning: message (+ snippet line);
 * results go to stdout. docs/cli.md is the user documentation.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ir/ox_buf.h"
#include "ir/ox_mem.h"
#include "cli.h"

#ifndef OPTIMUS_VERSION
#define OPTIMUS_VERSION "0.1.0"
#endif

/* ------------------------------------------------------------------ usage */

static const struct {
  const char *name;
  int (*run)(int, char **);
  const char *summary; /* its line of the usage below */
} commands[] = {
#define OX_CLI_ROW(name, summary) {#name, ox_cli_cmd_##name, summary},
    OX_CLI_COMMANDS(OX_CLI_ROW)
#undef OX_CLI_ROW
};

static void put_usage(FILE *f) {
  fputs("Usage: optimus [--help] [--version] COMMAND [ARGS...]\n"
        "\n"
        "Commands:\n",
        f);
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) fputs(commands[i].summary, f);
  fputs("\n"
        "FILE is print(graph) text, print_readable code or Optimus JSON; '-' reads stdin.\n"
        "Run 'optimus COMMAND --help' for the options of a command.\n"
        "Exit status: 0 success, 1 bad input or failed check/write (diff, compare-runs: the\n"
        "inputs differ; bisect: no step to name), 2 usage error.\n",
        f);
}

/* Whether argument cmd names the command whose table name is `name` ('_' there, '-' here). */
static bool command_is(const char *cmd, const char *name) {
  for (; *cmd && *name; cmd++, name++)
    if (*cmd != (*name == '_' ? '-' : *name)) return false;
  return !*cmd && !*name;
}

/* ------------------------------------------------------------------ main */

/* Big inputs are mapped (ox_map_file); if another program truncates one during the run, the
 * next read of a lost page raises SIGBUS: say what happened instead of dying silently. Outputs
 * are written to a temp file renamed at the end, so nothing half-written is left. */
static void on_sigbus(int sig) {
  (void)sig;
  static char msg[1200];
  static const char head[] = "optimus: an input file shrank while it was being read (another program truncated it): ",
                    none[] = "optimus: bus error (SIGBUS) with no input file mapped",
                    tail[] = "; stopped, nothing written\n";
  size_t n = sizeof head - 1;
  memcpy(msg, head, n);
  size_t named = ox_mapped_describe(msg + n, sizeof msg - n - sizeof tail);
  if (named) {
    n += named;
  } else {
    n = sizeof none - 1;
    memcpy(msg, none, n);
  }
  memcpy(msg + n, tail, sizeof tail - 1);
  n += sizeof tail - 1;
  if (write(2, msg, n) < 0) { /* nothing more to do */
  }
  _exit(EXIT_BAD);
}

int main(int argc, char **argv) {
  ox_mem_tune_for_batch(); /* one run, then exit: freed memory is worth keeping for reuse */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_sigbus;
  sigemptyset(&sa.sa_mask);
  if (sigaction(SIGBUS, &sa, NULL) == 0) ox_map_inputs = true;
  if (argc < 2) {
    put_usage(stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) {
    put_usage(stdout);
    return EXIT_OK;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("optimus %s\n", OPTIMUS_VERSION);
    return EXIT_OK;
  }
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (command_is(cmd, commands[i].name)) return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "optimus: unknown %s '%s'\n", cmd[0] == '-' ? "option" : "command", cmd);
  put_usage(stderr);
  return EXIT_USAGE;
}
