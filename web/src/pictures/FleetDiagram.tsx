// The fleet's topology, drawn once for what was reported and once for the truth: two spines,
// two leaves, on each leaf two HGX nodes of eight GPU tiles (by rank) and a spare node, then the
// ring order and the throughput against nominal. What each side says goes in as marks; the
// geometry is fixed.
import { Badge, Box, Line, Svg, TONE_ICON, textWidth, type DataAttrs, type Tone } from "./common";
import { GPUS_PER_NODE, LEAF_OF_NODE, N_NODES, N_RANKS, N_SPINES } from "./fleetTypes";

export interface TileMark {
  tone: Tone;
  /** One character drawn under the rank: what matters most about it (the legend says which). */
  glyph: string;
  /** Everything known of the rank, for its tooltip. */
  notes: string[];
  data?: DataAttrs;
}

export interface BoxMark {
  tone: Tone;
  badge: string;
  stale?: boolean;
  /** Lines under the badge (or the tiles), each with its tone. */
  notes: [string, Tone?][];
  data?: DataAttrs;
}

export interface Marks {
  tiles: TileMark[];
  nodes: BoxMark[];
  spines: BoxMark[];
  spares: BoxMark[];
  ring: { order: number[] | null; text: string };
  throughput: { fraction: number | null; tone: Tone; text: string };
  /** The benchmark's samples in words (the reported side only). */
  benchmark?: string;
}

/** The glyphs a tile may carry, most telling first: the legend under each picture. */
export const GLYPHS: [string, string][] = [
  ["✗", "an error in its log (out of memory, a CUDA failure, a current Xid 79), or a true fault"],
  ["!", "an alert names it"],
  ["▲", "hot: at its memory limit, unreadable, or silent"],
  ["≠", "a different collective in the watchdog's log"],
  ["◀", "its flight recorder is behind the others"],
  ["↻", "restarted"],
  ["○", "a red herring: reported as trouble, truly healthy"],
];

const W = 766;
const COL_W = 120;
const COL_GAP = 6;
const MACHINE_Y = 168;
const MACHINE_H = 160;
const TILE_W = 25;
const TILE_H = 28;
const RING_Y = MACHINE_Y + MACHINE_H + 22;
const THROUGHPUT_Y = RING_Y + 48;
const H = THROUGHPUT_Y + 56;

/** The machines' columns: each leaf's two nodes, then its spare. */
function column(leaf: number, slot: number): number {
  return 8 + (leaf * 3 + slot) * (COL_W + COL_GAP);
}

function nodeX(node: number): number {
  const leaf = LEAF_OF_NODE[node];
  return column(leaf, node - 2 * leaf);
}

const LEAF_W = 3 * COL_W + 2 * COL_GAP;
const SPINE_W = 210;
const SPINE_X = [W / 2 - SPINE_W - 60, W / 2 + 60];

export function FleetDiagram({
  title,
  testid,
  hosts,
  marks,
}: {
  title: string;
  testid: string;
  hosts: string[];
  marks: Marks;
}) {
  return (
    <Svg title={title} width={W} height={H} testid={testid}>
      <g className="pic-wires" aria-hidden="true">
        {[0, 1].map((leaf) =>
          SPINE_X.map((sx, spine) => (
            <line
              key={`${leaf}-${spine}`}
              x1={sx + SPINE_W / 2}
              y1={64}
              x2={column(leaf, 0) + LEAF_W / 2}
              y2={104}
              strokeWidth={2}
            />
          )),
        )}
        {[0, 1].map((leaf) =>
          [0, 1, 2].map((slot) => (
            <line
              key={`${leaf}-${slot}`}
              x1={column(leaf, 0) + LEAF_W / 2}
              y1={136}
              x2={column(leaf, slot) + COL_W / 2}
              y2={MACHINE_Y}
              strokeWidth={2}
              strokeDasharray={slot === 2 ? "5 4" : undefined}
            />
          )),
        )}
      </g>
      {Array.from({ length: N_SPINES }, (_, spine) => (
        <MarkedBox
          key={spine}
          x={SPINE_X[spine]}
          y={6}
          w={SPINE_W}
          h={58}
          title={`spine-${spine}`}
          mark={marks.spines[spine]}
          testid="spine"
        />
      ))}
      {[0, 1].map((leaf) => (
        <Box key={leaf} x={column(leaf, 0)} y={104} w={LEAF_W} h={32} title={`leaf-${leaf}`} testid="leaf" />
      ))}
      {Array.from({ length: N_NODES }, (_, node) => (
        <NodeBox
          key={node}
          node={node}
          host={hosts[node] ?? `node ${node}`}
          mark={marks.nodes[node]}
          tiles={marks.tiles}
        />
      ))}
      {[0, 1].map((leaf) => (
        <MarkedBox
          key={leaf}
          x={column(leaf, 2)}
          y={MACHINE_Y}
          w={COL_W}
          h={MACHINE_H}
          title={`spare, leaf-${leaf}`}
          mark={marks.spares[leaf]}
          testid="spare"
          dashed
        />
      ))}
      <Ring ring={marks.ring} />
      <Throughput throughput={marks.throughput} benchmark={marks.benchmark} />
    </Svg>
  );
}

/** A box whose mark is a badge and a few lines (spines, spares). */
function MarkedBox({
  x,
  y,
  w,
  h,
  title,
  mark,
  testid,
  dashed,
}: {
  x: number;
  y: number;
  w: number;
  h: number;
  title: string;
  mark: BoxMark;
  testid: string;
  dashed?: boolean;
}) {
  const inline = h < 80; // a spine: the badge beside the title
  return (
    <Box x={x} y={y} w={w} h={h} title={title} testid={testid} dashed={dashed || mark.stale} data={mark.data}>
      <Badge
        x={inline ? x + 8 + textWidth(title, 12) + 8 : x + 8}
        y={inline ? y + 4 : y + 26}
        tone={mark.tone}
        text={mark.badge}
        stale={mark.stale}
      />
      {mark.notes.map(([text, tone], i) => (
        <Line key={i} x={x} y={y} row={(inline ? 1 : 2.2) + i} tone={tone}>
          {text}
        </Line>
      ))}
    </Box>
  );
}

function NodeBox({ node, host, mark, tiles }: { node: number; host: string; mark: BoxMark; tiles: TileMark[] }) {
  const x = nodeX(node);
  const y = MACHINE_Y;
  const first = node * GPUS_PER_NODE;
  return (
    <Box
      x={x}
      y={y}
      w={COL_W}
      h={MACHINE_H}
      title={host}
      testid="node"
      dashed={mark.stale}
      data={{ "data-node": node, ...mark.data }}
    >
      <Line x={x} y={y} row={1}>
        node {node} · r{first}–{first + GPUS_PER_NODE - 1}
      </Line>
      <Badge x={x + 8} y={y + 38} tone={mark.tone} text={mark.badge} stale={mark.stale} />
      {Array.from({ length: GPUS_PER_NODE }, (_, gpu) => (
        <Tile
          key={gpu}
          rank={first + gpu}
          gpu={gpu}
          x={x + 6 + (gpu % 4) * (TILE_W + 3)}
          y={y + 60 + Math.floor(gpu / 4) * (TILE_H + 3)}
          mark={tiles[first + gpu]}
        />
      ))}
      {mark.notes.slice(0, 2).map(([text, tone], i) => (
        <Line key={i} x={x} y={y} row={7.2 + i} tone={tone}>
          {text}
        </Line>
      ))}
    </Box>
  );
}

function Tile({ rank, gpu, x, y, mark }: { rank: number; gpu: number; x: number; y: number; mark: TileMark }) {
  return (
    <g
      className={`pic-tile pic-tone-${mark.tone}`}
      data-testid="rank-tile"
      data-rank={rank}
      data-tone={mark.tone}
      {...mark.data}
    >
      <title>{[`rank ${rank} (GPU ${gpu})`, ...mark.notes].join(" · ")}</title>
      <rect x={x} y={y} width={TILE_W} height={TILE_H} rx={3} />
      <text x={x + TILE_W / 2} y={y + 11} className="pic-tile-rank">
        {rank}
      </text>
      {mark.glyph && (
        <text x={x + TILE_W / 2} y={y + 24} className="pic-tile-glyph">
          {mark.glyph}
        </text>
      )}
    </g>
  );
}

/** The ring's order: 32 cells, a heavy bar wherever it crosses from one leaf to the other. */
function Ring({ ring }: { ring: Marks["ring"] }) {
  const cell = (W - 16) / N_RANKS;
  return (
    <g data-testid="ring" data-order={ring.order?.join(",") ?? ""}>
      <text x={8} y={RING_Y - 6} className="pic-title">
        Ring order <tspan className="pic-plain">· {ring.text}</tspan>
      </text>
      {ring.order ? (
        ring.order.map((rank, i) => {
          const leaf = LEAF_OF_NODE[Math.floor(rank / GPUS_PER_NODE)];
          const next = ring.order![(i + 1) % ring.order!.length];
          const crosses = LEAF_OF_NODE[Math.floor(next / GPUS_PER_NODE)] !== leaf;
          return (
            <g key={i} className={`pic-ring-cell pic-ring-leaf-${leaf}`}>
              <rect x={8 + i * cell} y={RING_Y} width={cell - 1} height={18} />
              <text x={8 + i * cell + cell / 2} y={RING_Y + 13} className="pic-tile-rank">
                {rank}
              </text>
              {crosses && (
                <rect className="pic-ring-cross" x={8 + (i + 1) * cell - 2} y={RING_Y - 3} width={3} height={24} />
              )}
            </g>
          );
        })
      ) : (
        <rect className="pic-split-unknown" x={8} y={RING_Y} width={W - 16} height={18} />
      )}
    </g>
  );
}

function Throughput({ throughput, benchmark }: { throughput: Marks["throughput"]; benchmark?: Marks["benchmark"] }) {
  const w = W - 16;
  const f = throughput.fraction;
  return (
    <g data-testid="throughput" data-fraction={f ?? ""} className={`pic-gauge pic-tone-${throughput.tone}`}>
      <text x={8} y={THROUGHPUT_Y - 6} className="pic-title">
        Throughput against nominal{" "}
        <tspan className="pic-plain">
          · {TONE_ICON[throughput.tone]} {throughput.text}
        </tspan>
      </text>
      <rect className="pic-gauge-track" x={8} y={THROUGHPUT_Y} width={w} height={14} rx={3} />
      {f != null && (
        <rect className="pic-gauge-fill" x={8} y={THROUGHPUT_Y} width={w * Math.min(1, f)} height={14} rx={3} />
      )}
      {benchmark && (
        <text x={8} y={THROUGHPUT_Y + 34} data-testid="benchmark">
          {benchmark}
        </text>
      )}
    </g>
  );
}
