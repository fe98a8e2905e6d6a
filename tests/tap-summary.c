/* tap-summary: reads meson's testlog.json and prints the one line CI reads,
 *   N passed, N failed, N skipped
 * counting TAP subtests ("ok", "not ok", "# SKIP") in each test's captured stdout. A test
 * that meson reports as failed (crash, sanitizer exit, "Bail out!", timeout) but whose TAP
 * shows no "not ok" counts as one failure, so a crash can never hide behind earlier oks.
 * Exit status: 0 when nothing failed and at least one test passed, 1 otherwise. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int starts(const char *s, const char *p) { return strncmp(s, p, strlen(p)) == 0; }

static const char *str_field(json_object *o, const char *k) {
  json_object *v;
  return json_object_object_get_ex(o, k, &v) ? json_object_get_string(v) : "";
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: tap-summary build/meson-logs/testlog.json [more testlog.json ...]\n");
    return 2;
  }
  long passed = 0, failed = 0, skipped = 0;
  char *line = NULL;
  size_t cap = 0;
  for (int a = 1; a < argc; a++) {
    FILE *f = fopen(argv[a], "r");
    if (!f) {
      perror(argv[a]);
      failed++;
      continue;
    }
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
      json_object *o = json_tokener_parse(line);
      if (!o) continue;
      const char *name = str_field(o, "name");
      const char *result = str_field(o, "result");
      const char *out = str_field(o, "stdout");
      long p = 0, fl = 0, s = 0;
      int plan_skip = 0;
      const char *q = out;
      while (q && *q) {
        const char *e = strchr(q, '\n');
        size_t ll = e ? (size_t)(e - q) : strlen(q);
        char buf[4096];
        size_t c = ll < sizeof buf - 1 ? ll : sizeof buf - 1;
        memcpy(buf, q, c);
        buf[c] = 0;
        if (starts(buf, "not ok")) {
          if (strstr(buf, "# TODO"))
            s++;
          else
            fl++;
        } else if (starts(buf, "ok")) {
          if (strstr(buf, "# SKIP") || strstr(buf, "# skip"))
            s++;
          else
            p++;
        } else if (starts(buf, "1..0")) {
          plan_skip = 1;
        }
        q = e ? e + 1 : NULL;
      }
      if (plan_skip && !p && !fl) s++;
      int meson_ok = !strcmp(result, "OK") || !strcmp(result, "SKIP") || !strcmp(result, "EXPECTEDFAIL");
      if (!meson_ok && fl == 0) {
        fl = 1;
        fprintf(stderr,
                "tap-summary: %s: %s with no failing subtest in its TAP (crash, sanitizer or bail out)\n",
                name, result);
      }
      if (!meson_ok || fl) fprintf(stderr, "tap-summary: FAILED %s (%ld failed subtests)\n", name, fl);
      if (!strcmp(result, "SKIP") && !p && !fl && !s) s = 1;
      passed += p;
      failed += fl;
      skipped += s;
      json_object_put(o);
    }
    fclose(f);
  }
  free(line);
  printf("%ld passed, %ld failed, %ld skipped\n", passed, failed, skipped);
  return (failed || passed == 0) ? 1 : 0;
}
