/* SIMULATOR stand-in for the ECCL header (gcu.topsrider sim). */
#ifndef ECCL_H
#define ECCL_H
#ifdef __cplusplus
extern "C" {
#endif
typedef enum { ecclSuccess = 0, ecclInvalidArgument = 4 } ecclResult_t;
/* version = major*1000000 + minor*1000 + patch, e.g. 2005136 */
int ecclGetVersion(int *version);
const char *ecclGetVersionString(void);
#ifdef __cplusplus
}
#endif
#endif
