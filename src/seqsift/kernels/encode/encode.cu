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

// Whole records packed into one text (partitioning.PackedRecords): record r's
// bytes, at raw[raw_starts[r]] back to back as the genome cache holds them, go
// encoded to out[text_starts[r]]; the separators between records were set to
// the NEVER code before the launch. One block per record (a grid-stride loop
// over records when there are more than the grid), its threads stride the
// record's bytes.
extern "C" __global__ void pack_records(const unsigned char* raw, const long long* raw_starts,
                                        const long long* text_starts, const long long* lengths, long long records,
                                        const unsigned char* table, unsigned char* out)
{
    __shared__ unsigned char code_of[256];
    for (int i = threadIdx.x; i < 256; i += blockDim.x) code_of[i] = table[i];
    __syncthreads();
    for (long long r = blockIdx.x; r < records; r += gridDim.x) {
        const unsigned char* source = raw + raw_starts[r];
        unsigned char* target = out + text_starts[r];
        const long long length = lengths[r];
        for (long long i = threadIdx.x; i < length; i += blockDim.x) target[i] = code_of[source[i]];
    }
}
