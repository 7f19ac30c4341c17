// A learning curve (or two runs' curves overlaid) in plain SVG: axes with round ticks, a thin
// raw line and, for noisy curves, a moving average. Each series says its point count in
// data-points, and the figure's caption says the last value in words.
import { extent, movingAverage, path, scale, short, ticks, type Points } from "./chart";

export interface Series {
  label: string;
  points: Points;
}

const W = 480;
const H = 220;
const M = { left: 52, right: 12, top: 10, bottom: 30 };
const NOISY = 50;

export function LineChart({ title, series }: { title: string; series: Series[] }) {
  const box = extent(series.map((s) => s.points));
  const last = series.map((s) => {
    const p = s.points.at(-1);
    return p ? `${series.length > 1 ? `${s.label}: ` : ""}${short(p[1])} at step ${short(p[0])}` : `${s.label}: no points`;
  });
  return (
    <figure className="chart" data-curve={title}>
      <figcaption>
        <strong>{title}</strong> <span className="small muted">{last.join(" · ")}</span>
      </figcaption>
      {box ? <Plot series={series} box={box} title={title} /> : <p className="muted small">No points yet.</p>}
    </figure>
  );
}

function Plot({ series, box, title }: { series: Series[]; box: NonNullable<ReturnType<typeof extent>>; title: string }) {
  const x = scale(box.x, [M.left, W - M.right]);
  const y = scale(box.y, [H - M.bottom, M.top]);
  const xs = ticks(box.x[0], box.x[1], 5);
  const ys = ticks(box.y[0], box.y[1], 4);
  return (
    <svg viewBox={`0 0 ${W} ${H}`} className="chart-svg" role="img" aria-label={`${title} by step`}>
      {ys.map((t) => (
        <g key={`y${t}`} className="grid">
          <line x1={M.left} x2={W - M.right} y1={y(t)} y2={y(t)} />
          <text x={M.left - 6} y={y(t)} dy="0.32em" textAnchor="end">
            {short(t)}
          </text>
        </g>
      ))}
      {xs.map((t) => (
        <text key={`x${t}`} className="tick" x={x(t)} y={H - M.bottom + 16} textAnchor="middle">
          {short(t)}
        </text>
      ))}
      <line className="axis-line" x1={M.left} x2={W - M.right} y1={H - M.bottom} y2={H - M.bottom} />
      <text className="tick" x={W - M.right} y={H - 2} textAnchor="end">
        step
      </text>
      {series.map((s, i) => {
        const noisy = s.points.length > NOISY;
        const smooth = noisy ? movingAverage(s.points, Math.max(Math.floor(s.points.length / 25), 5)) : null;
        return (
          <g key={s.label} className={`series series-${i}`} data-series={s.label} data-points={s.points.length}>
            <path className={noisy ? "raw" : "line"} d={path(s.points, x, y)} />
            {smooth && <path className="line" d={path(smooth, x, y)} />}
            {s.points.length === 1 && <circle cx={x(s.points[0][0])} cy={y(s.points[0][1])} r="3" />}
          </g>
        );
      })}
    </svg>
  );
}
