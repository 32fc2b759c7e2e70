// asciichart ships no types; the part of its API the CLI uses.
declare module 'asciichart' {
  interface PlotConfig {
    height?: number;
    min?: number;
    max?: number;
    offset?: number;
    padding?: string;
    colors?: string[];
    symbols?: string[];
    format?: (x: number, i: number) => string;
  }
  const asciichart: {
    plot(series: number[] | number[][], config?: PlotConfig): string;
    red: string;
    green: string;
    yellow: string;
    blue: string;
    magenta: string;
    cyan: string;
    default: string;
  };
  export default asciichart;
}
