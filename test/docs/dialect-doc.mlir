// docs/dialect.md is the dialect documentation generated from the ODS
// descriptions; regenerate it with `ninja -C build fakv-dialect-doc`.
// RUN: diff %fakv-obj/dialect/FakvDialect.md %fakv-src/docs/dialect.md
// docs/dialect-gpu.md likewise for fakvgpu (`ninja -C build fakvgpu-dialect-doc`).
// RUN: diff %fakv-obj/dialect/FakvGPUDialect.md %fakv-src/docs/dialect-gpu.md
