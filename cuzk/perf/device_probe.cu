// The gate's device probe (device_probe.py): one thread spins on the GPU's global timer for spin_ns. Alone on the
// device it takes its spin and its launch; behind another context's work it also takes that context's time slice.
extern "C" __global__ void device_probe(unsigned long long spin_ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < spin_ns);
}
