// CUB's device radix sort of uint64 keys over a bit range, as a C ABI for ctypes (cuzk/gpu/cub_sort.py).
// The MSM's bucket keys order by their bucket id bits alone (optimization K1): CuPy's sort has no bit range,
// so it runs all 64 bits. Built with nvcc as a shared library (tools/build_cubins.py); the CUDA runtime is
// linked statically and works on the caller's (CuPy's) primary context.
#include <cub/device/device_radix_sort.cuh>
#include <cstdint>

extern "C" {

// Temporary storage for n keys in the DoubleBuffer form (the caller gives the alternate buffer).
int cuzk_sort_u64_temp_bytes(int device, int64_t n, int begin_bit, int end_bit, size_t* bytes) {
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) return (int)e;
    cub::DoubleBuffer<uint64_t> keys(nullptr, nullptr);
    *bytes = 0;
    return (int)cub::DeviceRadixSort::SortKeys(nullptr, *bytes, keys, n, begin_bit, end_bit);
}

// Sorts the n keys of buf0 by bits [begin_bit, end_bit), stably, on `stream`; buf1 is scratch.
// *selector: 0 when the result is in buf0, 1 when in buf1. Returns 0 or a cudaError_t.
int cuzk_sort_u64(int device, void* temp, size_t bytes, uint64_t* buf0, uint64_t* buf1, int64_t n, int begin_bit,
                  int end_bit, void* stream, int* selector) {
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) return (int)e;
    cub::DoubleBuffer<uint64_t> keys(buf0, buf1);
    e = cub::DeviceRadixSort::SortKeys(temp, bytes, keys, n, begin_bit, end_bit, (cudaStream_t)stream);
    *selector = keys.selector;
    return (int)e;
}

const char* cuzk_cuda_error_string(int e) { return cudaGetErrorString((cudaError_t)e); }

}
