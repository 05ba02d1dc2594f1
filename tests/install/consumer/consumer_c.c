/* Built with nothing but `pkg-config --cflags --libs onyx` (tests/install): opens a model
 * through the installed C API and prints its inputs. usage: consumer_c MODEL */
#include <onyx/onyx_c.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  OnyxSession* s = NULL;
  OnyxStatus* st = onyx_session_create(argv[1], NULL, &s);
  if (st) {
    fprintf(stderr, "%s\n", onyx_status_message(st));
    onyx_status_free(st);
    return 1;
  }
  size_t n = onyx_session_io_count(s, ONYX_INPUTS);
  for (size_t i = 0; i < n; ++i)
    printf("input %s: %s\n", onyx_session_io_name(s, ONYX_INPUTS, i), onyx_session_io_type(s, ONYX_INPUTS, i));
  onyx_session_free(s);
  return n == 1 ? 0 : 1;
}
