/* SIMULATOR stand-in for the TopsRider runtime header (gcu.topsrider sim). */
#ifndef TOPSRT_H
#define TOPSRT_H
#ifdef __cplusplus
extern "C" {
#endif
typedef enum { topsSuccess = 0, topsErrorInvalidValue = 1 } topsError_t;
/* version = major*1000000 + minor*1000 + patch, e.g. 2005136 */
topsError_t topsRuntimeGetVersion(int *version);
const char *topsRuntimeGetVersionString(void);
#ifdef __cplusplus
}
#endif
#endif
