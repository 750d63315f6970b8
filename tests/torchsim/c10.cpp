// A TEST DOUBLE of libc10.so: empty; the bridge links -lc10 as it does against a real torch.
extern "C" __attribute__((visibility("default"))) int
torchsim_c10(void)
{
	return 0;
}
