// A virtual call for "step into the call you choose": which override runs is known only
// from the object's vtable at the stop.
struct Animal {
    virtual int speak(int n);
    virtual ~Animal() {}
};

struct Dog : Animal {
    int speak(int n) override;
};

int Animal::speak(int n)
{
    return n;
}

int Dog::speak(int n)
{
    return n * 10;
}

__attribute__((noipa)) Animal *make(int argc)
{
    if (argc > 5)
        return new Animal;
    return new Dog;
}

volatile int sink;

int main(int argc, char **)
{
    Animal *a = make(argc);
    sink = a->speak(argc); // VIRTUAL
    delete a;
    return 0;
}
