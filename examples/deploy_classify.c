/* Classifies Fashion-MNIST test images with the int8 convnet that examples/deploy.cpp exported:
 * plain C, linked with the exported object and libfluxion_aot_rt.a only (no Fluxion, LLVM or
 * Python at run time). examples/check_deploy.sh builds and runs it:
 *
 *   cc -O2 -I DIR deploy_classify.c DIR/fmnist_int8.o libfluxion_aot_rt.a -lstdc++ -lm -lmvec -lpthread
 *   ./a.out DIR/test_images.u8 DIR/test_labels.u8 N
 *
 * prints the class of each of the N images, one per line, then its accuracy over them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fmnist_int8.h" /* void fmnist_int8(const uint8_t* in0, float* out0): u8[1,28,28] -> f32[1,10] */

enum { kPixels = 28 * 28, kClasses = 10 };

static int read_file(const char* path, uint8_t* to, long n) {
  FILE* f = fopen(path, "rb");
  if (!f) return 0;
  const long got = (long)fread(to, 1, (size_t)n, f);
  fclose(f);
  return got == n;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s images.u8 labels.u8 count\n", argv[0]);
    return 2;
  }
  const long n = atol(argv[3]);
  uint8_t* images = malloc((size_t)(n * kPixels));
  uint8_t* labels = malloc((size_t)n);
  /* The exported function's buffers: 64-byte aligned, as its header asks. */
  uint8_t* image = aligned_alloc(64, 64 * ((kPixels + 63) / 64));
  float* logits = aligned_alloc(64, 64);
  if (!images || !labels || !read_file(argv[1], images, n * kPixels) || !read_file(argv[2], labels, n)) {
    fprintf(stderr, "cannot read %ld images from %s and %s\n", n, argv[1], argv[2]);
    return 1;
  }
  long right = 0;
  for (long i = 0; i < n; ++i) {
    for (int p = 0; p < kPixels; ++p) image[p] = images[i * kPixels + p];
    fmnist_int8(image, logits);
    int best = 0;
    for (int c = 1; c < kClasses; ++c)
      if (logits[c] > logits[best]) best = c;
    printf("%d\n", best);
    right += best == labels[i];
  }
  printf("accuracy %.4f (%ld of %ld)\n", (double)right / (double)n, right, n);
  free(images);
  free(labels);
  free(image);
  free(logits);
  return 0;
}
