// The sample table of the MP4 files the server prepares (H.264 in an ISO BMFF file with
// +faststart, written by experiments/media.py): enough to hand every coded frame to a WebCodecs
// VideoDecoder and to know each frame's time, without a third-party demuxer.
//
//   parseMp4(buffer) -> {codec, description, width, height, timescale, fps, samples}
//     codec: the WebCodecs codec string ("avc1.64001e"); description: the avcC record.
//     samples: coded frames in decode order, {offset, size, key, pts, duration} with times in
//       timescale units on the presentation timeline (the edit list applied, first frame 0).
//     Throws an Error naming what it could not read (another container, no H.264 track).

const CONTAINERS = new Set(["moov", "trak", "mdia", "minf", "stbl", "edts"]);
const AVC1_CHILDREN = 78;  // avc1 sample entry: 8 reserved/index + 70 bytes of fields

function readError(what) {
  return new Error(`not an MP4 file the runner can read (${what})`);
}

// The boxes directly inside [start, end) as {type, start, end} of their payloads.
function children(view, start, end) {
  const boxes = [];
  for (let at = start; at + 8 <= end;) {
    let size = view.getUint32(at);
    const type = String.fromCharCode(...new Uint8Array(view.buffer, view.byteOffset + at + 4, 4));
    let header = 8;
    if (size === 1) {
      size = Number(view.getBigUint64(at + 8));
      header = 16;
    } else if (size === 0) {
      size = end - at;
    }
    if (size < header || at + size > end) throw readError(`box ${type} overruns its parent`);
    boxes.push({ type, start: at + header, end: at + size });
    at += size;
  }
  return boxes;
}

// Finds boxes by path ("moov/trak"), descending only into containers.
function find(view, box, path) {
  const [head, ...rest] = path.split("/");
  const found = children(view, box.start, box.end).filter((b) => b.type === head);
  if (!rest.length) return found;
  return found.flatMap((b) => (CONTAINERS.has(b.type) ? find(view, b, rest.join("/")) : []));
}

function one(view, box, path) {
  const found = find(view, box, path);
  if (!found.length) throw readError(`no ${path}`);
  return found[0];
}

// A full box's entry table: its count after version/flags, then `fields` 32-bit values each.
function table(view, box, fields, signed = false) {
  const count = view.getUint32(box.start + 4);
  const rows = [];
  for (let i = 0, at = box.start + 8; i < count; i++, at += 4 * fields) {
    const row = [];
    for (let f = 0; f < fields; f++) {
      row.push(signed && f === fields - 1 ? view.getInt32(at + 4 * f) : view.getUint32(at + 4 * f));
    }
    rows.push(row);
  }
  return rows;
}

function expand(rows) {  // [[count, value], ...] -> one value per sample
  return rows.flatMap(([count, value]) => Array(count).fill(value));
}

function sampleSizes(view, stbl) {
  const stsz = one(view, stbl, "stsz");
  const fixed = view.getUint32(stsz.start + 4);
  const count = view.getUint32(stsz.start + 8);
  if (fixed) return Array(count).fill(fixed);
  return Array.from({ length: count }, (_, i) => view.getUint32(stsz.start + 12 + 4 * i));
}

function chunkOffsets(view, stbl) {
  const [stco] = find(view, stbl, "stco");
  if (stco) return table(view, stco, 1).map(([offset]) => offset);
  const co64 = one(view, stbl, "co64");
  const count = view.getUint32(co64.start + 4);
  return Array.from({ length: count },
    (_, i) => Number(view.getBigUint64(co64.start + 8 + 8 * i)));
}

function sampleOffsets(view, stbl, sizes) {
  const chunks = chunkOffsets(view, stbl);
  const runs = table(view, one(view, stbl, "stsc"), 3);  // [first chunk (1-based), per chunk, desc]
  const offsets = [];
  for (let r = 0; r < runs.length; r++) {
    const last = r + 1 < runs.length ? runs[r + 1][0] - 1 : chunks.length;
    for (let chunk = runs[r][0]; chunk <= last; chunk++) {
      let at = chunks[chunk - 1];
      for (let i = 0; i < runs[r][1] && offsets.length < sizes.length; i++) {
        offsets.push(at);
        at += sizes[offsets.length - 1];
      }
    }
  }
  if (offsets.length !== sizes.length) throw readError("sample table does not add up");
  return offsets;
}

// Where presentation starts on the media timeline: the first edit's media time (ffmpeg shifts
// B-frame streams this way), else 0.
function editStart(view, trak) {
  const [elst] = find(view, trak, "edts/elst");
  if (!elst || !view.getUint32(elst.start + 4)) return 0;
  const version = view.getUint8(elst.start);
  return version === 1 ? Number(view.getBigInt64(elst.start + 16)) : view.getInt32(elst.start + 12);
}

function videoTrack(view, moov) {
  const trak = find(view, moov, "trak").find((t) => {
    const hdlr = one(view, t, "mdia/hdlr");
    return view.getUint32(hdlr.start + 8) === 0x76696465;  // "vide"
  });
  if (!trak) throw readError("no video track");
  return trak;
}

function avcConfig(view, stbl) {
  const stsd = one(view, stbl, "stsd");
  const entry = children(view, stsd.start + 8, stsd.end)[0];
  if (!entry || !["avc1", "avc3"].includes(entry.type)) throw readError("not H.264");
  const width = view.getUint16(entry.start + 24);
  const height = view.getUint16(entry.start + 26);
  const avcC = children(view, entry.start + AVC1_CHILDREN, entry.end)
    .find((b) => b.type === "avcC");
  if (!avcC) throw readError("no avcC");
  const description = new Uint8Array(view.buffer.slice(view.byteOffset + avcC.start,
    view.byteOffset + avcC.end));
  const hex = (i) => description[i].toString(16).padStart(2, "0");
  return { codec: `avc1.${hex(1)}${hex(2)}${hex(3)}`, description, width, height };
}

export function parseMp4(buffer) {
  const view = new DataView(buffer);
  const moov = one(view, { start: 0, end: buffer.byteLength }, "moov");
  const trak = videoTrack(view, moov);
  const mdhd = one(view, trak, "mdia/mdhd");
  const timescale = view.getUint32(mdhd.start + (view.getUint8(mdhd.start) === 1 ? 20 : 12));
  const stbl = one(view, trak, "mdia/minf/stbl");
  const sizes = sampleSizes(view, stbl);
  const offsets = sampleOffsets(view, stbl, sizes);
  const durations = expand(table(view, one(view, stbl, "stts"), 2));
  const [ctts] = find(view, stbl, "ctts");
  const shifts = ctts ? expand(table(view, ctts, 2, view.getUint8(ctts.start) === 1)) : [];
  const [stss] = find(view, stbl, "stss");
  const keys = stss ? new Set(table(view, stss, 1).map(([n]) => n - 1)) : null;
  if (durations.length !== sizes.length) throw readError("stts and stsz disagree");
  const start = editStart(view, trak);
  let dts = 0;
  const samples = sizes.map((size, i) => {
    const sample = { offset: offsets[i], size, key: keys ? keys.has(i) : true,
      pts: dts + (shifts[i] || 0) - start, duration: durations[i] };
    dts += durations[i];
    return sample;
  });
  const sorted = samples.map((s) => s.duration).sort((a, b) => a - b);
  const fps = timescale / sorted[Math.floor(sorted.length / 2)];
  return { ...avcConfig(view, stbl), timescale, fps, samples };
}
