/* A shared library with thread-local variables, for samples/c/loc_tls.c: its TLS block is
   found through the thread's dtv and the library's module id. */
__thread int lib_counter = 7;
__thread char lib_tag[8] = "lib";

int lib_bump(int by)
{
  lib_counter += by;
  lib_tag[3] = (char)('0' + by);
  return lib_counter; /* lib stop */
}
