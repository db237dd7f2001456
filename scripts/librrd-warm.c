/* collectd's pattern, without a harness around it: one process calling
 * rrd_update_r once per file per cycle over perftest files, printing CPU
 * time (and user time) per update and read syscalls per cycle. Built
 * against rrd.h (Debian: librrd-dev) and run on whichever librrd.so.8 the
 * loader finds (docs/BENCHMARKS.md, "2026-11-25 — librrd: where the time
 * goes, kept descriptors, both libraries in one run"):
 *
 *   cc -O2 -o librrd-warm scripts/librrd-warm.c -lrrd
 *   mkdir deb ours && ./librrd-warm deb 20000 0 create && cp -r deb/. ours/
 *   ./librrd-warm deb 20000 3 0                                   # Debian's
 *   LD_LIBRARY_PATH=$PWD/target/librrd ./librrd-warm ours 20000 3 0   # ours
 *
 * Arguments: DIR FILES CYCLES [create | FIRST_CYCLE]; a later run over the
 * same files passes the number of cycles already run as FIRST_CYCLE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <rrd.h>
static long syscr(void){FILE*f=fopen("/proc/self/io","r");char k[64];long v,r=0;while(fscanf(f,"%63s %ld",k,&v)==2)if(!strcmp(k,"syscr:"))r=v;fclose(f);return r;}
static double ucpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_utime.tv_usec/1e6;}
static double cpu(void){struct rusage r;getrusage(RUSAGE_SELF,&r);return r.ru_utime.tv_sec+r.ru_stime.tv_sec+(r.ru_utime.tv_usec+r.ru_stime.tv_usec)/1e6;}
int main(int argc,char**argv){
  const char*dir=argv[1];int n=atoi(argv[2]);int cycles=atoi(argv[3]);int create=argc>4&&argv[4][0]=='c';int first=argc>4&&!create?atoi(argv[4]):0;long errs=0;
  const char*defs[]={"DS:in:GAUGE:600:U:U","DS:out:GAUGE:600:U:U","RRA:AVERAGE:0.5:1:600","RRA:AVERAGE:0.5:6:600","RRA:MAX:0.5:6:600","RRA:AVERAGE:0.5:24:600","RRA:MAX:0.5:24:600","RRA:AVERAGE:0.5:144:600","RRA:MAX:0.5:144:600"};
  char path[4096];long t0=1700000000;
  if(create){for(int i=0;i<n;i++){snprintf(path,sizeof path,"%s/f%06d.rrd",dir,i);
    if(rrd_create_r(path,300,t0,9,defs)){fprintf(stderr,"create: %s\n",rrd_get_error());return 1;}}}
  char val[64];const char*vp[1]={val};
  for(int c=0;c<cycles;c++){double c0=cpu(),u0=ucpu();long r0=syscr();struct timespec w0,w1;clock_gettime(CLOCK_MONOTONIC,&w0);
    long t=t0+300*(first+c+1);
    for(int i=0;i<n;i++){snprintf(path,sizeof path,"%s/f%06d.rrd",dir,i);
      snprintf(val,sizeof val,"%ld:%d:%d",t,i,c);
      if(rrd_update_r(path,NULL,1,vp)){if(!errs++)fprintf(stderr,"update: %s\n",rrd_get_error());rrd_clear_error();}}
    clock_gettime(CLOCK_MONOTONIC,&w1);
    if(errs){printf("%ld errors\n",errs);return 1;}printf("cycle %d: %.2f us cpu/update (user %.2f), %.0f updates/s reads %ld\n",c,(cpu()-c0)/n*1e6,(ucpu()-u0)/n*1e6,n/((w1.tv_sec-w0.tv_sec)+(w1.tv_nsec-w0.tv_nsec)/1e9),syscr()-r0);fflush(stdout);}
  return 0;}
