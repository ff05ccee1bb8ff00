// A class whose methods write its members, for going back against gdb's `record full`
// (tests/reverse_gdb.rs): a watchpoint on a member finds the method that wrote it, and
// `stepBack` leaves a method into its caller's line.
#include <cstdio>

class Account {
public:
    explicit Account(long start) : balance_(start), moves_(0) {}

    __attribute__((noinline)) void deposit(long v)
    {
        balance_ += v;                     // deposit line
        moves_++;
    }

    __attribute__((noinline)) bool withdraw(long v)
    {
        if (v > balance_)
            return false;                  // refused line
        balance_ -= v;                     // withdraw line
        moves_++;
        return true;
    }

    long balance() const { return balance_; }
    int moves() const { return moves_; }

private:
    long balance_;
    int moves_;
};

static Account g_acct(10);

int main()
{
    long total = 0;
    for (int i = 1; i <= 5; i++) {
        g_acct.deposit(i * 10);            // deposit call line
        if (!g_acct.withdraw(i * 7 + 20))  // withdraw call line
            total += 1000;
        total += g_acct.balance();         // total line
    }
    std::printf("%ld %ld %d\n", total, g_acct.balance(), g_acct.moves()); // done line
    return 0;
}
