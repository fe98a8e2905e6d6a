/* touch-memory.c - what fresh memory costs on this machine: maps MIB MiB of anonymous memory,
 * asks for huge pages (HUGE=1) or not (HUGE=0), writes one byte per 4 KiB page and prints the
 * time. docs/benchmarks.md ("Huge pages off") uses it to compare 2 MiB and 4 KiB pages after a
 * pause ("cold") and back to back ("warm").
 *
 *   gcc -O2 -o /tmp/touch-memory tools/touch-memory.c
 *   for i in 1 2 3; do sleep 3; /tmp/touch-memory 100 1; sleep 3; /tmp/touch-memory 100 0; done
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: touch-memory MIB HUGE(0|1)\n");
    return 2;
  }
  size_t n = (size_t)strtoul(argv[1], NULL, 10) << 20;
  int huge = atoi(argv[2]);
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    perror("mmap");
    return 1;
  }
  madvise(p, n, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
  for (size_t i = 0; i < n; i += 4096) p[i] = 1;
  clock_gettime(CLOCK_MONOTONIC, &b);
  printf("%zu MiB, huge pages %s: %.1f ms\n", n >> 20, huge ? "on" : "off",
         (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
  return 0;
}
