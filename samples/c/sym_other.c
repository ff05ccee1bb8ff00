/* Second translation unit for crates/symbols laziness tests. */

int other_twice(int x)
{
    int doubled = x * 2;
    return doubled;
}
