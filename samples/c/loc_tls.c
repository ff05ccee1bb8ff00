/* Thread-local variables of the executable and of a shared library (loc_tls_lib.c), read
   in the main thread and in three more threads run one after another, so that every stop
   is in a known thread (tests/locations_gdb.rs compares them with gdb). */
#include <pthread.h>

extern __thread int lib_counter;
extern __thread char lib_tag[8];
int lib_bump(int by);

__thread int tls_count = 100;
__thread long tls_big[4] = {1, 2, 3, 4};
__thread struct self { int id; const char *name; } tls_self = {-1, "none"};
static const char *names[] = {"main", "one", "two", "three"};

__attribute__((noinline)) int work(int index)
{
  tls_count += index * 10;
  tls_big[index % 4] = index * 1000;
  tls_self.id = index;
  tls_self.name = names[index];
  int seen = lib_bump(index);
  return seen + tls_count; /* tls stop */
}

static void *thread_main(void *arg)
{
  long index = (long)arg;
  work((int)index);
  return 0;
}

int main(void)
{
  int total = work(0);
  for (long i = 1; i <= 3; i++) {
    pthread_t t;
    pthread_create(&t, 0, thread_main, (void *)i);
    pthread_join(t, 0);
  }
  return total > 0 ? 0 : 1;
}
