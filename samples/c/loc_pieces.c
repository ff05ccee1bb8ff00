/* A struct split into pieces at -O2 whose location has empty DW_OP_pieces: at f's entry
   only p.a is known (gcc: "a variable in $rdi [4-byte piece], and an empty 12-byte
   piece"), later p.b is lost again. tests/locations_gdb.rs compares it with gdb. */
struct pt { int a; int b; long c; };

__attribute__((noinline)) void use(int v) { asm volatile("" :: "r"(v)); }
__attribute__((noinline)) int g(int v) { asm volatile("" : "+r"(v)); return v + 1; }

__attribute__((noinline)) int f(int x)
{
  struct pt p = {x, g(x), 5}; /* piece entry */
  use(p.b);
  use(p.a); /* piece stop */
  return p.a;
}

int main(void)
{
  return f(3) == 3 ? 0 : 1;
}
