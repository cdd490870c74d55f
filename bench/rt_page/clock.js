// Shared by the bench pages (index.html, pacing.js): window.clockMarks(n), which the drivers
// (bench/rt_accuracy.py, bench/frame_pacing.py) call to tie the page clock to trace
// timestamps: each mark is a trace event whose ts is the same instant as its startTime.
window.clockMarks = (n) => {
  const marks = [];
  for (let i = 0; i < n; i += 1) {
    const name = `clock-${performance.now()}-${i}`;
    marks.push({ name, start: performance.mark(name).startTime });
  }
  return marks;
};
