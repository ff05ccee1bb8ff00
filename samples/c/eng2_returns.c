/* Return values of every SysV class, for step-out ("finish") against gdb. */
#include <stdbool.h>

struct pair { int x, y; };            /* one INTEGER eightbyte: rax */
struct wide { long a, b; };           /* INTEGER, INTEGER: rax, rdx */
struct dpair { double x, y; };        /* SSE, SSE: xmm0, xmm1 */
struct mixed { int i; double d; };    /* INTEGER, SSE: rax, xmm0 */
struct rmixed { double d; long l; };  /* SSE, INTEGER: xmm0, rax */
struct fquad { float a, b, c; };      /* SSE, SSE: xmm0, xmm1 */
struct big { long a, b, c; };         /* MEMORY: rax holds its address */
enum color { RED, GREEN, BLUE };

static int counter;

int ret_int(int a) { return a * 7 - 100; }
unsigned long ret_ulong(void) { return 0xfedcba9876543210ul; }
short ret_short(void) { return -1234; }
char ret_char(void) { return 'q'; }
bool ret_bool(void) { return counter == 0; }
float ret_float(void) { return 1.25f; }
double ret_double(double x) { return x / 3.0; }
long double ret_ldouble(void) { return 2.5L; }
const char *ret_ptr(void) { return counter ? "bye" : "hello"; }
enum color ret_enum(void) { return BLUE; }
__int128 ret_i128(void) { return ((__int128)3 << 64) | 5; }
struct pair ret_pair(void) { struct pair p = {3, -4}; return p; }
struct wide ret_wide(void) { struct wide w = {-1, 1L << 40}; return w; }
struct dpair ret_dpair(void) { struct dpair d = {0.5, -8.25}; return d; }
struct mixed ret_mixed(void) { struct mixed m = {11, 3.75}; return m; }
struct rmixed ret_rmixed(void) { struct rmixed m = {-0.125, 99}; return m; }
struct fquad ret_fquad(void) { struct fquad q = {1.5f, 2.5f, -3.5f}; return q; }
struct big ret_big(void) { struct big b = {7, 8, 9}; return b; }
void ret_void(void) { counter++; }

int main(void) {
    int sum = ret_int(20);
    sum += (int)ret_ulong();
    sum += ret_short();
    sum += ret_char();
    sum += ret_bool();
    sum += (int)ret_float();
    sum += (int)ret_double(10.0);
    sum += (int)ret_ldouble();
    sum += ret_ptr()[0];
    sum += ret_enum();
    sum += (int)ret_i128();
    sum += ret_pair().x;
    sum += (int)ret_wide().a;
    sum += (int)ret_dpair().x;
    sum += ret_mixed().i;
    sum += (int)ret_rmixed().l;
    sum += (int)ret_fquad().c;
    sum += (int)ret_big().b;
    ret_void();
    return sum & 1;
}
