/* Values that live in vector and x87 registers at -O2: an int4 in %xmm0, long
   doubles in %st0 and %st1, and a double argument passed in %xmm0 whose entry value
   the caller's call site describes (a constant) or does not (tests/locations_gdb.rs compares them with
   gdb). */
typedef int int4 __attribute__((vector_size(16)));

__attribute__((noinline)) int4 vec_add(int4 a, int4 b)
{
  int4 s = a + b;
  asm volatile("" : "+x"(s));
  return s; /* vec stop */
}

__attribute__((noinline)) long double ld_mix(long double x, long double y)
{
  register long double p = x * y;
  register long double q = x - y;
  asm volatile("" : "+t"(p), "+u"(q));
  return p / q; /* x87 stop */
}

static volatile double dsink;
static volatile int isink;

__attribute__((noipa)) double opaque(double x)
{
  return x * 1.5;
}

__attribute__((noinline)) double xmm_entry(double x, int n)
{
  double r = opaque(x);
  isink = n;
  dsink = r; /* xmm entry stop */
  return r + 1;
}

int main(void)
{
  int4 a = {1, -2, 300, 40000};
  int4 b = {0, 0, 0, 0};
  int4 r = vec_add(a, b);
  long double l = ld_mix(2.5L, 0.5L);
  double d = xmm_entry(2.5 * (r[0] + 1), r[0] + 6);
  d += xmm_entry(1.25, r[0] + 3); /* its call site says x is 1.25 */
  return r[0] + (int)l + (int)d;
}
