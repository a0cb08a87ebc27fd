// Not an algorithm family: the CuPy backend's (kernels/cuda.py upload_and_encode) text encoding,
// kept in a folder of its own because the package ships kernels/*/*.cu.
// Reference bytes -> text codes on the device (seqsift/alphabet.py), in place.
//
// The host sends the FASTA's newline-free bytes as they are (upper and lower
// case, N, IUPAC codes); each byte b becomes code_of[b] (A/a 0, C/c 1, G/g 2,
// T/t 3, anything else 4). The 256 codes come from the host
// (alphabet.TEXT_CODE_ARRAY), so the host and the device share one table.
// Each thread translates 4-byte words in a grid-stride loop (the buffer is a
// fresh allocation, so words are aligned); block 0 does the last n % 4 bytes.

extern "C" __global__ void encode_text_codes(unsigned char* text, long long n, const unsigned char* table)
{
    __shared__ unsigned int code_of[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) code_of[i] = table[i];
    __syncthreads();
    const long long words = n >> 2;
    unsigned int* word = reinterpret_cast<unsigned int*>(text);
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long w = (long long)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += stride) {
        const unsigned int v = word[w];
        word[w] = code_of[v & 0xffu] | (code_of[(v >> 8) & 0xffu] << 8)
                | (code_of[(v >> 16) & 0xffu] << 16) | (code_of[v >> 24] << 24);
    }
    const long long tail = (words << 2) + threadIdx.x;
    if (blockIdx.x == 0 && tail < n) text[tail] = (unsigned char)code_of[text[tail]];
}
